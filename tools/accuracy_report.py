#!/usr/bin/env python3
"""Regenerate docs/accuracy.md: gpuplan's memory estimate against every measured case in tests/data/calibration.

usage: python3 tools/accuracy_report.py build/gpuplan [docs/accuracy.md]
"""
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "calibration"))
import score  # noqa: E402  (the same command line the scorer runs)

GiB = float(1 << 30)
SETS = [("cases.jsonl", "Shared calibration set (H200, measured by the project's founders)"),
        ("measured_m1.jsonl", "Our measurements (H200, tools/measure/measure.py, plan tools/measure/plan_m1.json)"),
        ("measured_m2.jsonl", "Held-out measurements (plan tools/measure/plan_m2.json), taken after the model was built"),
        ("measured_d1.jsonl", "Multi-GPU measurements (2 × H200, tools/measure/measure_dist.py, plan tools/measure/plan_dist.json): "
                              "DDP, FSDP2 with CPU offload, tensor parallelism (DTensor, loss_parallel), 1F1B pipeline; "
                              "the most-loaded rank"),
        ("measured_d2.jsonl", "Held-out multi-GPU measurements (2 × H200, plan tools/measure/plan_dist2.json), taken after "
                              "the tensor/pipeline-parallel model was built"),
        ("measured_r1.jsonl", "Re-measurement of the shared set's worst training case (same workload and stack, "
                              "tools/measure/plan_snapshot.json): the same live bytes, 4.1 GB less reserved than the shared "
                              "run — the caching allocator's reserve varies between runs of one workload"),
        ("measured_n1.jsonl", "2025 architectures (one H100 80GB, plan tools/measure/plan_n1.json): gpt-oss, Llama 4, "
                              "Qwen3-Next, GLM-4.5-Air, OLMo 2, Granite MoE, PhiMoE, Qwen3-MoE; the first run found "
                              "Llama 4's dense expert routing and gpt-oss's bf16 sink softmax, modelled since"),
        ("measured_t1.jsonl", "Held-out steps for the step-time model (one H100 80GB, plan tools/measure/plan_t1.json): 0.5B–8B "
                              "dense, Qwen3-30B-A3B and Mixtral shapes with fewer layers, LoRA and full, recomputation on "
                              "and off; it found that frozen LoRA bases under autocast and recomputation hold no weight casts"),
        ("measured_f1.jsonl", "Held-out fine-tunes (one H100 80GB, plan tools/measure/plan_ft1.json, 2026-11-25): LoRA on "
                              "8–24B models, full fine-tunes of 0.5–7B, micro-batch 1–16; two runs that ran out of "
                              "memory pass when gpuplan says they do not fit"),
        ("measured_f1s.jsonl", "Held-out memory savers (one H100 80GB, plan tools/measure/plan_ft1.json): torchtune's chunked "
                               "loss (eager), Liger's fused linear cross-entropy, activations offloaded with save_on_cpu"),
        ("measured_g2.jsonl", "Held-out generation at serving batch sizes (one H100 80GB, plan tools/measure/plan_g2.json, "
                              "2026-11-25): dense 1–14B, Qwen3-MoE, Qwen3-Next, PhiMoE and gpt-oss shapes at batch 1–64, "
                              "prompts 1k–16k"),
        ("measured_g3.jsonl", "Gemma 2 2B training at 4k tokens (one H100 80GB, plan tools/measure/plan_g3.json): SDPA runs "
                              "cuDNN attention, eager keeps the soft-capped score matrices; batch 2 ran out of memory"),
        ("measured_g4.jsonl", "Generation at batch 1–64 with short prompts on a second H100 host (plan "
                              "tools/measure/plan_g4.json): Llama 3.1 8B, Llama 3.2 1B, OLMo 2 1B, Qwen3-MoE shape"),
        ("measured_g5.jsonl", "Generation at batch 1–64 and prompts 1k–16k, the set #45's model was built from (one H200, "
                              "plan tools/measure/plan_g5.json, 2026-11-29, allocator traces in traces/g5-*): Qwen3-MoE, "
                              "PhiMoE, Qwen3-Next, GLM-4.5-Air, Llama 4, gpt-oss and dense shapes; Gemma 2 2B and Qwen3-MoE "
                              "training"),
        ("measured_g6.jsonl", "Held-out generation and training, fixed before #45's model and measured after it (one H200, "
                              "plan tools/measure/plan_g6.json, 2026-11-29): Granite MoE, Mixtral, Qwen3-30B-A3B, "
                              "DeepSeek-V3 and GLM-4.5 shapes, dense 1–24B; Gemma 2 2B at 4 × 4,096 ran out of memory"),
        ("measured_g7.jsonl", "Held-out generation fixed before the #43/#45 session of 2026-11-29 modelled speed, measured "
                              "before its merges and scored after them (one H200, plan tools/measure/plan_g7.json): "
                              "dense 0.6–14B, Gemma 2, Phi-3, Qwen3-MoE, Granite MoE, GLM-4.5, DeepSeek-V3, "
                              "Qwen3-30B-A3B, Mixtral shapes and gpt-oss (eager attention) at batch 2–64"),
        ("measured_g8.jsonl", "Held-out generation planned and committed before it was measured, after the #43 session of "
                              "2026-11-29 changed HF eager speed (one H200, plan tools/measure/plan_g8.json): eager "
                              "attention with and without gpt-oss's sinks, Qwen3-MoE, Granite MoE, DeepSeek-V3, Qwen3-Next, "
                              "GLM-4.5, Mixtral shapes and dense 1–7B at batch 2–32"),
        ("measured_t2.jsonl", "OLMo 2 1B generations at batch 16 and 48 with allocator traces (one H200, plan "
                              "tools/measure/plan_t2.json, 2026-11-29): its norms after attention and the MLP"),
        ("measured_s1.jsonl", "Re-measurement of the shared set's two worst generations (one H200, plan "
                              "tools/measure/plan_s1.json, 2026-11-29): the same workloads reserved 0.35 GiB less (GPT-2 "
                              "fp16) and 0.33 GiB more (Qwen2.5-0.5B) than in the shared run, with a 0.09 GiB smaller "
                              "CUDA context")]


def run(binary, path):
    base = os.path.dirname(path)
    rows = []
    for line in open(path):
        if not line.strip():
            continue
        c = json.loads(line)
        if c["measured"].get("out_of_memory"):
            continue  # a verdict, not a number: scored by tests/calibration/score.py
        c["config"] = os.path.join(base, c["config"])
        out = json.loads(subprocess.run(score.command(binary, c), capture_output=True, text=True, check=True).stdout)
        m = c["measured"]
        rows.append((c["name"], m["device_bytes"], out["memory"]["total_bytes"], m["allocated_bytes"],
                     out["memory"]["peak_allocated_bytes"], out["memory"]["peak_phase"]))
    return rows


def summary(errs):
    errs = sorted(abs(e) for e in errs)
    p90 = errs[min(len(errs) - 1, int(round(0.9 * len(errs))) - 1)]
    return f"median {100 * statistics.median(errs):.1f} %, p90 {100 * p90:.1f} %, worst {100 * errs[-1]:.1f} %"


def main():
    binary = sys.argv[1]
    dest = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "docs", "accuracy.md")
    out = ["# Accuracy: estimated vs measured peak GPU memory", "",
           "Generated by `tools/accuracy_report.py` — do not edit by hand.", "",
           "`measured` is the process's device memory at its peak (PyTorch allocator reserved + CUDA context after",
           "initialisation), `estimated` is gpuplan's `memory.total_bytes`; `allocated` compares live tensors",
           "(`torch.cuda.max_memory_allocated` with `memory.peak_allocated_bytes`). Every case ran on an NVIDIA H200",
           "with PyTorch 2.11 (CUDA 13) and transformers 5.17, models built from their HF config with random weights.",
           "",
           "## Method", "",
           "The `pytorch` profile models what allocates: per decoder layer the tensors autograd keeps for backward",
           "(checked tensor by tensor with `saved_tensors_hooks`, `tools/measure/measure.py --probe`), the loss's",
           "fp32 logits copies, autocast's cached weight casts, optimizer temporaries, gradients as they appear in",
           "backward, FSDP/DDP buffers, the KV cache of `generate`. It evaluates live memory at each moment of the",
           "step and takes the largest; the caching allocator's reserve (replayed, see below) and the CUDA context",
           "come on top.", ""]
    for fname, title in SETS:
        rows = run(binary, os.path.join(ROOT, "tests", "data", "calibration", fname))
        errs = [(e - m) / m for _, m, e, _, _, _ in rows]
        aerrs = [(ea - ma) / ma for _, _, _, ma, ea, _ in rows]
        out += [f"## {title}", "", f"{len(rows)} cases. Device memory |error|: {summary(errs)}. "
                f"Live tensors |error|: {summary(aerrs)}.", "",
                "| case | measured GiB | estimated GiB | error | allocated error | peak phase |",
                "| --- | ---: | ---: | ---: | ---: | --- |"]
        for (name, m, e, ma, ea, phase), err, aerr in zip(rows, errs, aerrs):
            out.append(f"| {name} | {m / GiB:.2f} | {e / GiB:.2f} | {100 * err:+.1f} % | {100 * aerr:+.1f} % | {phase} |")
        out.append("")
    out += ["## What is not modelled (yet)", "",
            "- Training replays three steps of allocations through a model of PyTorch's caching allocator (best-fit",
            "  blocks, splitting, 2 MiB/20 MiB segments) at the granularity of whole tensors; the order of small",
            "  temporaries inside a layer is approximate, so the reserve can be off by a few GB on some workloads",
            "  (eager attention, Gemma 2's 256K vocabulary). Inference replays generate too, with a floor of measured",
            "  shares (half the final KV cache) because the replay does not see generate's many small tensors.",
            "- DDP: the first bucket holds every gradient and is rebuilt into 25 MB buckets after the first iteration",
            "  (modelled: it stays cached as one segment). In the shared 2-GPU AMP case and our pure-bf16 case the old",
            "  bucket was still alive through the second step (+4.9 / +2.5 GB live); in our AMP run it was not. Not",
            "  modelled (the live tensors of that run and of every third step match).",
            "- Multi-GPU reserve: the replay keeps FSDP2's gradient shards in the reduce-scatter stream's own pool (an",
            "  allocator snapshot showed it), which halves the gap on FSDP2 Llama-3.1-8B (−18 → −12 %). Pipeline and",
            "  tensor-parallel runs create more NCCL communicators (context 1.8–2.2 GB measured vs 1.5 GB modelled).",
            "- The replay is sensitive to the order of large blocks: fixing which gradient the tied-embedding sum",
            "  replaces moved one shared case (Llama-3.2-1B bf16, recomputation) from +1.5 % to −13.9 %.",
            "- Hybrid sharding (HSDP) and 4-GPU layouts are not measured (2-GPU machines only).",
            "- Pipeline last stage: torch pipelining keeps every micro-batch's logits and concatenates them at the end",
            "  of the step (an allocator snapshot of the held-out Qwen3 run showed a segment of exactly m logits):",
            "  modelled, it took that case from −33 % to −4 %, but Llama-3.2-3B (m = 8) is now over by 14 %: there the",
            "  concatenation found room in cached blocks the replay does not have.",
            "- GPT-NeoX under autocast keeps two more 16-bit [tokens, h] tensors per layer than the model counts.",
            "- Other runtimes (vLLM, llama.cpp, DeepSpeed, Megatron) have their own profiles, not calibrated here.",
            "- QLoRA is not measured: bitsandbytes is not installed on the measuring machine (no network there);",
            "  its NF4 weights follow the format's layout (4.127 bits per weight), dequantisation buffers are not counted.",
            "- The CUDA context is the value measured after initialisation; kernels loaded later add ~0.15–0.25 GB.",
            ""]
    open(dest, "w").write("\n".join(out))
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
