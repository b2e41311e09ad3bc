#!/usr/bin/env python3
"""What one HF generate prefill and decode step launch and cost on the GPU: ground truth for the eager host floor.

usage: python3 tools/measure/step_probe.py PLAN.json [--only NAME,...]
For each infer case of a plan (measure.py's format) it writes a line to $OUT/steps.jsonl with
- wall times as measure.py takes them (warm, median of three generate calls: one token, then N tokens);
- from torch.profiler over one generate of one token and one of N tokens: CUDA kernel launches, the kernels' summed
  GPU time and the host's CUDA-runtime calls, for the prefill and per decode step ((N-token run - 1-token run) / (N-1));
- the decode step's ten costliest kernels (name, launches per step, GPU µs per step) and the prefill's twelve (name,
  launches, GPU µs);
- the host CPU's model name: the eager floor is the host's time per launched operator, so it depends on the machine.
Each case runs in its own process. A decode step whose wall time is well above its kernels' GPU time is host-bound;
wall / launches is then the host's cost per launch on that machine.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import build_config, run_plan  # noqa: E402

STEPS = 17  # tokens of the long generate: 16 decode steps after the prefill


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def profiled(torch, generate):
    """Kernel launches, their GPU time (s), CUDA-runtime calls and kernel names with (count, µs) of one call."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        generate()
        torch.cuda.synchronize()
    kernels, runtime = {}, 0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            n, us = kernels.get(e.name, (0, 0.0))
            kernels[e.name] = (n + 1, us + e.device_time)
        elif e.name.startswith(("cudaLaunch", "cuLaunch")):
            runtime += 1
    return kernels, runtime


def one(case_path):
    case = json.load(open(case_path))
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    w = case["workload"]
    torch.manual_seed(0)
    if w.get("cudnn_sdp") is False:  # which SDPA backend the decode step's cost comes from
        torch.backends.cuda.enable_cudnn_sdp(False)
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[w["precision"]]
    cfg = build_config(case["config"])
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=w.get("attention", "sdpa"))
    model.eval()
    ids = torch.randint(0, cfg.vocab_size, (w["batch"], w["prompt_len"]), device="cuda")

    def gen(n):
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                           do_sample=False, pad_token_id=0)

    def timed(n):
        runs = []
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            gen(n)
            torch.cuda.synchronize()
            runs.append(time.perf_counter() - t0)
        return sorted(runs)[1]

    gen(STEPS)  # warm-up: cuBLAS handles, kernels loaded, the allocator's segments
    prefill, whole = timed(1), timed(STEPS)
    k1, r1 = profiled(torch, lambda: gen(1))
    kn, rn = profiled(torch, lambda: gen(STEPS))
    steps = STEPS - 1
    per_step = {name: ((n - k1.get(name, (0, 0))[0]) / steps, (us - k1.get(name, (0, 0.0))[1]) / steps)
                for name, (n, us) in kn.items()}
    top = sorted(per_step.items(), key=lambda kv: -kv[1][1])[:10]
    prefill_top = sorted(k1.items(), key=lambda kv: -kv[1][1])[:12]
    m = {"prefill_seconds": prefill, "decode_step_seconds": (whole - prefill) / steps,
         "prefill_launches": sum(n for n, _ in k1.values()), "prefill_runtime_calls": r1,
         "prefill_gpu_seconds": sum(us for _, us in k1.values()) * 1e-6,
         "step_launches": sum(n for n, _ in per_step.values()), "step_runtime_calls": (rn - r1) / steps,
         "step_gpu_seconds": sum(us for _, us in per_step.values()) * 1e-6,
         "step_top_kernels": [{"name": name[:120], "per_step": round(n, 2), "gpu_us": round(us, 1)}
                              for name, (n, us) in top],
         "prefill_top_kernels": [{"name": name[:120], "launches": n, "gpu_us": round(us, 1)}
                                 for name, (n, us) in prefill_top]}
    stack = {"gpu": torch.cuda.get_device_name(0), "cpu": cpu_model(), "torch": torch.__version__,
             "transformers": transformers.__version__, "cuda": torch.version.cuda}
    rec = {"name": case["name"], "model": case.get("model", case["name"]), "workload": w, "measured": m,
           "stack": stack}
    print("RESULT " + json.dumps(rec), flush=True)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--one":
        one(sys.argv[2])
        return
    plan = json.load(open(sys.argv[1]))
    only = set(sys.argv[3].split(",")) if len(sys.argv) >= 4 and sys.argv[2] == "--only" else None
    plan = [c for c in plan if c["mode"] == "infer"]
    run_plan(plan, only, "steps.jsonl", lambda case, path: [sys.executable, __file__, "--one", path], 300)


if __name__ == "__main__":
    main()
