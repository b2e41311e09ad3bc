#!/usr/bin/env python3
"""Measure peak GPU memory of training steps and HF generate on a real GPU, in the calibration format.

usage: python3 tools/measure/measure.py PLAN.json [--only NAME,...] [--probe]
Writes $OUT/cases.jsonl (one calibration case per line, see tests/data/calibration/README.md) and
$OUT/configs/NAME.json (the HF config each case was built from). With --probe it runs one forward per training
case instead and writes $OUT/probes.jsonl: the tensors autograd saved, grouped by dtype and shape. Each case runs in its own process so the
peak statistics and the CUDA context are clean. Models are random-initialised from their config (no download).

The plan is a list of {"name", "mode": "train"|"infer", "config": {model_type + HF config fields},
"workload": {...}} with workload fields as in the calibration README.
"""
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

OUT = os.environ.get("OUT", "/tmp/measure")


def build_config(spec):
    from transformers import AutoConfig
    spec = dict(spec)
    model_type = spec.pop("model_type")
    return AutoConfig.for_model(model_type, **spec)


def init_context(torch):
    """Device memory beyond the caching allocator right after CUDA initialisation (the calibration's context_bytes)."""
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    return (total - free) - torch.cuda.memory_reserved()


def end_context(torch):
    """The same at the end of the run, after cuBLAS/SDPA kernels were loaded."""
    free, total = torch.cuda.mem_get_info()
    return (total - free) - torch.cuda.memory_reserved()


def training_loss(torch, model, kind):
    """The loss of one micro-batch, as a function of the token ids.
    hf: the model's own causal-LM loss (labels=input_ids: full logits, upcast to fp32 inside the loss).
    chunked: torchtune's CEWithChunkedOutputLoss (torchtune 0.6 modules/loss/ce_chunked_output_loss.py): the output
      projection applied to 8 chunks of the hidden states, each chunk's logits upcast to fp32 in its own
      cross_entropy(reduction="sum"), the sum divided by the token count.
    fused: Liger's fused linear cross-entropy (liger-kernel 0.5 ops/fused_linear_cross_entropy.py) in plain PyTorch:
      rows in chunks of next_pow2(ceil(BT / ceil(V / H))); per chunk the 16-bit logits, their fp32 softmax, the logit
      gradient, and at once the input's and the weight's gradients; no logits survive the forward."""
    import math
    import torch.nn.functional as F
    if kind == "hf":
        return lambda ids: model(input_ids=ids, labels=ids).loss
    base, head = model.get_decoder(), model.get_output_embeddings()

    def shifted(ids):
        h = base(input_ids=ids).last_hidden_state[:, :-1]
        return h, ids[:, 1:]

    if kind == "chunked":
        def chunked(ids):
            h, labels = shifted(ids)
            total = sum(F.cross_entropy(head(hc).float().flatten(0, 1), lc.flatten(), reduction="sum")
                        for hc, lc in zip(h.chunk(8, dim=1), labels.chunk(8, dim=1)))
            return total / labels.numel()
        return chunked

    class FusedLinearCE(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, target):
            n, hdim = x.shape
            vocab = weight.shape[0]
            chunk = 1 << max(0, math.ceil(math.log2(math.ceil(n / math.ceil(vocab / hdim)))))
            grad_x = torch.zeros_like(x)
            grad_w = torch.zeros_like(weight) if ctx.needs_input_grad[1] else None
            loss = torch.zeros((), device=x.device, dtype=torch.float32)
            for i in range(0, n, chunk):
                xc, tc = x[i:i + chunk], target[i:i + chunk]
                logits = (xc @ weight.t()).float()
                loss += F.cross_entropy(logits, tc, reduction="sum")
                g = logits.softmax(-1)
                g[torch.arange(len(tc), device=x.device), tc] -= 1
                g = (g / n).to(x.dtype)
                del logits
                grad_x[i:i + chunk] = g @ weight
                if grad_w is not None:
                    grad_w.addmm_(g.t(), xc)
                del g
            ctx.save_for_backward(grad_x, grad_w)
            return loss / n

        @staticmethod
        def backward(ctx, grad_out):
            grad_x, grad_w = ctx.saved_tensors
            return grad_x * grad_out, (None if grad_w is None else grad_w * grad_out), None

    def fused(ids):
        h, labels = shifted(ids)
        return FusedLinearCE.apply(h.flatten(0, 1), head.weight, labels.flatten())
    if kind != "fused":
        raise SystemExit(f"unknown loss {kind}")
    return fused


def run_train(case, cfg):
    import torch
    from transformers import AutoModelForCausalLM
    w = case["workload"]
    torch.manual_seed(0)
    prec = w["precision"]
    dtype = torch.float32 if prec in ("fp32", "amp-bf16") else torch.bfloat16
    m = {"context_bytes": init_context(torch)}
    with torch.device("cuda"):  # initialise on the GPU: minutes faster than on the CPU for billions of weights
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=w.get("attention", "sdpa"))
    torch.cuda.synchronize()
    m.update({"weights_bytes": torch.cuda.memory_allocated(), "n_params": sum(p.numel() for p in model.parameters())})
    if w.get("lora"):
        from peft import LoraConfig, get_peft_model
        r = w["lora"]["rank"]
        model = get_peft_model(model, LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0,
                                                 target_modules=w["lora"]["targets"]))
    if w.get("grad_checkpointing"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if w.get("lora"):
            model.enable_input_require_grads()
    model.config.use_cache = False
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    m["n_trainable"] = sum(p.numel() for p in params)
    o = w["optimizer"]
    if o == "adamw":
        opt = torch.optim.AdamW(params, lr=1e-5, foreach=True)
    elif o == "adamw-fused":
        opt = torch.optim.AdamW(params, lr=1e-5, fused=True)
    elif o == "adam":
        opt = torch.optim.Adam(params, lr=1e-5, foreach=True)
    elif o == "sgd":
        opt = torch.optim.SGD(params, lr=1e-5, foreach=True)
    elif o == "sgd-momentum":
        opt = torch.optim.SGD(params, lr=1e-5, momentum=0.9, foreach=True)
    elif o == "adafactor":
        from transformers.optimization import Adafactor
        opt = Adafactor(params, lr=1e-5, relative_step=False, scale_parameter=False, warmup_init=False)
    else:
        raise SystemExit(f"unknown optimizer {o}")
    ids = torch.randint(0, cfg.vocab_size, (w["batch"], w["seq"]), device="cuda")
    loss_of = training_loss(torch, model, w.get("loss", "hf"))
    offload = (torch.autograd.graph.save_on_cpu(pin_memory=True) if w.get("activation_offload")
               else contextlib.nullcontext())

    def step():
        # As HF Trainer does: keep only the loss, so the logits are freed before backward.
        with offload, (torch.autocast("cuda", dtype=torch.bfloat16) if prec == "amp-bf16"
                       else contextlib.nullcontext()):
            loss = loss_of(ids)
        torch.cuda.synchronize()
        ph = {"fwd_peak": torch.cuda.max_memory_allocated()}
        loss.backward()
        torch.cuda.synchronize()
        ph["bwd_peak"] = torch.cuda.max_memory_allocated()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss
        torch.cuda.synchronize()
        ph["step_peak"] = torch.cuda.max_memory_allocated()
        return ph

    phases = []
    peak_alloc, peak_res = 0, 0
    for _ in range(3):
        torch.cuda.reset_peak_memory_stats()
        phases.append(step())
        peak_alloc = max(peak_alloc, torch.cuda.max_memory_allocated())
        peak_res = max(peak_res, torch.cuda.max_memory_reserved())
    # Step time: the median of further steps, after the three above warmed the allocator, cuBLAS and the clocks.
    times = []
    for _ in range(w.get("timed_steps", 3)):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    m["step_seconds"] = sorted(times)[len(times) // 2]
    m["step_seconds_all"] = times
    m["state_after_step_bytes"] = torch.cuda.memory_allocated()
    m["phases"] = phases
    return m, peak_alloc, peak_res


def run_infer(case, cfg):
    import torch
    from transformers import AutoModelForCausalLM
    w = case["workload"]
    torch.manual_seed(0)
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[w["precision"]]
    m = {"context_bytes": init_context(torch)}
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=w.get("attention", "sdpa"))
    model.eval()
    torch.cuda.synchronize()
    m.update({"weights_bytes": torch.cuda.memory_allocated(), "n_params": sum(p.numel() for p in model.parameters())})
    ids = torch.randint(0, cfg.vocab_size, (w["batch"], w["prompt_len"]), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    if os.environ.get("TRACE"):
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=40_000_000)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=w["new_tokens"],
                             min_new_tokens=w["new_tokens"], do_sample=False, return_dict_in_generate=True,
                             pad_token_id=0)
    torch.cuda.synchronize()
    if os.environ.get("TRACE"):
        write_trace(torch, case["name"])
    kv = 0
    cache = out.past_key_values
    for layer in getattr(cache, "layers", []):
        # keys/values; linear-attention layers (Qwen3-Next) keep conv and recurrent states instead
        for t in vars(layer).values():
            if torch.is_tensor(t):
                kv += t.numel() * t.element_size()
    m["kv_cache_bytes"] = kv
    # cudaMalloc calls, and the times one failed and the allocator released its cached blocks to retry (a long
    # generation's growing caches can fill the GPU with freed segments).
    stats = torch.cuda.memory_stats()
    m.update({k: stats[s] for k, s in (("alloc_retries", "num_alloc_retries"), ("device_allocs", "num_device_alloc"),
                                       ("device_frees", "num_device_free")) if s in stats})
    alloc, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    del out, cache
    if w.get("timed", True) and w["new_tokens"] > 1:
        m.update(generate_times(torch, model, ids, w["new_tokens"]))
    return m, alloc, reserved


def generate_times(torch, model, ids, new_tokens):
    """Warm timings after the measured run: the prefill (generate of one token) and the whole generate, each the
    median of three; a decode step is their difference over the remaining tokens."""
    def timed(n):
        runs = []
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.no_grad():
                model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                               min_new_tokens=n, do_sample=False, pad_token_id=0)
            torch.cuda.synchronize()
            runs.append(time.perf_counter() - t0)
        return sorted(runs)[1]
    prefill, whole = timed(1), timed(new_tokens)
    return {"prefill_seconds": prefill, "generate_seconds": whole,
            "decode_step_seconds": (whole - prefill) / (new_tokens - 1)}


def write_trace(torch, name):
    """The caching allocator's large-pool events of the generate call (requests over 1 MiB, their frees, segments
    added and released), in order, as TSV lines `action size address stream` in $OUT/traces/NAME.tsv.gz: what
    tests replay through the allocator model."""
    import gzip
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    os.makedirs(os.path.join(OUT, "traces"), exist_ok=True)
    keep = ("alloc", "free_completed", "segment_alloc", "segment_free")
    with gzip.open(os.path.join(OUT, "traces", name + ".tsv.gz"), "wt") as f:
        for e in snap["device_traces"][0]:
            if e["action"] in keep and e["size"] > (1 << 20):
                f.write(f"{e['action']}\t{e['size']}\t{e['addr']}\t{e['stream']}\n")


def probe(case_path):
    """Which tensors autograd keeps from one forward: unique storages grouped by grad_fn, dtype and shape."""
    case = json.load(open(case_path))
    import torch
    from transformers import AutoModelForCausalLM
    cfg = build_config(case["config"])
    w = case["workload"]
    prec = w["precision"]
    dtype = torch.float32 if prec in ("fp32", "amp-bf16") else torch.bfloat16
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=w.get("attention", "sdpa"))
    if w.get("lora"):
        from peft import LoraConfig, get_peft_model
        r = w["lora"]["rank"]
        model = get_peft_model(model, LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0,
                                                 target_modules=w["lora"]["targets"]))
    model.train()
    params = {p.data_ptr() for p in model.parameters()}
    ids = torch.randint(0, cfg.vocab_size, (w["batch"], w["seq"]), device="cuda")
    seen, groups = set(), {}

    def pack(t):
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if ptr not in seen and ptr not in params:
            seen.add(ptr)
            made_by = type(t.grad_fn).__name__ if t.grad_fn is not None else ("leaf" if t.requires_grad else "no-grad")
            key = (str(t.dtype).replace("torch.", ""), tuple(t.shape), made_by)
            n, b = groups.get(key, (0, 0))
            groups[key] = (n + 1, b + st.nbytes())
        return t

    base = torch.cuda.memory_allocated()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        ctx = torch.autocast("cuda", dtype=torch.bfloat16) if prec == "amp-bf16" else torch.autocast("cuda", enabled=False)
        with ctx:
            loss = model(input_ids=ids, labels=ids).loss
    torch.cuda.synchronize()
    tokens = w["batch"] * w["seq"]
    rows = sorted(groups.items(), key=lambda kv: -kv[1][1])
    out = {"name": case["name"], "tokens": tokens, "held_after_forward": torch.cuda.memory_allocated() - base,
           "saved_unique_bytes": sum(b for _, (n, b) in rows),
           "groups": [{"dtype": k[0], "shape": list(k[1]), "made_by": k[2], "count": n, "bytes": b}
                      for k, (n, b) in rows[:60]]}
    print("RESULT " + json.dumps(out), flush=True)


def summarize_segments(torch):
    """Caching-allocator segments at the end of the run, by stream: reserved, allocated, and the free blocks."""
    out = {}
    for seg in torch.cuda.memory_snapshot():
        s = out.setdefault(str(seg["stream"]), {"segments": 0, "reserved": 0, "allocated": 0, "free_blocks": []})
        s["segments"] += 1
        s["reserved"] += seg["total_size"]
        s["allocated"] += seg["allocated_size"]
        s["free_blocks"] += [b["size"] for b in seg["blocks"] if b["state"] == "inactive"]
        s.setdefault("segment_sizes", []).append(seg["total_size"])
        s.setdefault("layout", []).append([(b["size"], b["state"] == "inactive") for b in seg["blocks"]][:6])
    for s in out.values():
        fb = sorted(s["free_blocks"], reverse=True)
        s["free_blocks"] = {"count": len(fb), "bytes": sum(fb), "largest": fb[:8]}
        big = sorted(zip(s.pop("segment_sizes"), s.pop("layout")), key=lambda x: -x[0])[:12]
        s["largest_segments"] = [{"size": z, "blocks": blk} for z, blk in big]
    return out


def one(case_path):
    case = json.load(open(case_path))
    import torch
    import transformers
    cfg = build_config(case["config"])
    fn = run_train if case["mode"] == "train" else run_infer
    m, alloc, reserved = fn(case, cfg)
    if os.environ.get("SNAPSHOT"):
        m["segments"] = summarize_segments(torch)
    ctx = m["context_bytes"]
    m.update({"device_bytes": reserved + ctx, "reserved_bytes": reserved, "allocated_bytes": alloc,
              "context_end_bytes": end_context(torch)})
    stack = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
             "transformers": transformers.__version__, "cuda": torch.version.cuda}
    try:
        import peft
        stack["peft"] = peft.__version__
    except ImportError:
        pass
    os.makedirs(os.path.join(OUT, "configs"), exist_ok=True)
    cfg_name = f"configs/{case['name']}.json"
    cfg.to_json_file(os.path.join(OUT, cfg_name))
    rec = {"name": case["name"], "mode": case["mode"], "model": case.get("model", case["name"]),
           "config": cfg_name, "workload": case["workload"], "measured": m, "stack": stack}
    print("RESULT " + json.dumps(rec), flush=True)


def run_plan(plan, only, out_name, command, timeout):
    """Each case of the plan in its own process(es): command(case_path) is the argv; a RESULT line on stdout is the
    case, appended to $OUT/out_name."""
    os.makedirs(OUT, exist_ok=True)
    res = open(os.path.join(OUT, out_name), "a")
    for case in plan:
        if only and case["name"] not in only:
            continue
        path = os.path.join(OUT, f".case-{case['name']}.json")
        json.dump(case, open(path, "w"))
        t0 = time.time()
        # A session of its own, so that a case over its time (a hung collective) is ended with every process it
        # started (torchrun's ranks too) and the plan goes on with the next case.
        p = subprocess.Popen(command(case, path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            print(f"FAIL {case['name']} ({time.time() - t0:.0f}s): over {timeout}s, ended", flush=True)
            os.remove(path)
            continue
        line = [l for l in out.splitlines() if l.startswith("RESULT ")]
        if p.returncode == 0 and line:
            res.write(line[0][7:] + "\n")
            res.flush()
            print(f"ok   {case['name']} ({time.time() - t0:.0f}s)", flush=True)
        else:
            errors = [l for l in err.strip().splitlines() if "Error" in l or "error" in l]
            tail = errors[-4:] or (err.strip().splitlines() or ["?"])[-4:]
            print(f"FAIL {case['name']} ({time.time() - t0:.0f}s): {' | '.join(tail)}", flush=True)
        os.remove(path)


def parse_args():
    """PLAN.json [--only NAME,...]"""
    plan = json.load(open(sys.argv[1]))
    only = set(sys.argv[3].split(",")) if len(sys.argv) >= 4 and sys.argv[2] == "--only" else None
    return plan, only


def main():
    if len(sys.argv) >= 3 and sys.argv[1] in ("--one", "--probe-one"):
        (one if sys.argv[1] == "--one" else probe)(sys.argv[2])
        return
    probing = "--probe" in sys.argv
    if probing:
        sys.argv.remove("--probe")
    plan, only = parse_args()
    run_plan(plan, only, "probes.jsonl" if probing else "cases.jsonl",
             lambda case, path: [sys.executable, __file__, "--probe-one" if probing else "--one", path], 400)


if __name__ == "__main__":
    main()
