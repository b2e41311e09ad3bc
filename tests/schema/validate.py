#!/usr/bin/env python3
"""Validate real gpuplan JSON outputs against the schemas the binary prints (gpuplan schema NAME).

usage: validate.py GPUPLAN_BINARY TESTS_DATA_DIR
"""
import json
import subprocess
import sys

import jsonschema

binary, data = sys.argv[1], sys.argv[2]
cases = [
    ("train", ["train", "--params", "7B"]),
    ("train", ["train", "--model", "llama-3.1-70b", "--gpus", "8", "--nodes", "4", "--tp", "8", "--sp", "--pp", "2", "--grad-accum", "16", "--zero", "1", "--gpu", "h100", "--tokens", "1T"]),
    ("train", ["train", "--model", "mixtral-8x7b", "--gpus", "8", "--ep", "8", "--zero", "1", "--cp", "1"]),
    ("train", ["train", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--tokens", "1T", "--max-memory", "80GB"]),
    ("train", ["train", "--config", f"{data}/calibration/configs/train-gpt2-fp32-adamw-b8-s1024.json", "--lora-rank", "8", "--lora-targets", "c_attn"]),
    ("train", ["train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--fine-tune", "--objective", "cheapest"]),
    ("train", ["train", "--model", "llama-3.1-8b", "--lora-rank", "16", "--qlora", "--loss", "chunked:4", "--gpu", "rtx-4090", "--advise"]),
    ("infer", ["infer", "--model", "llama-3.1-8b"]),
    ("infer", ["infer", "--model", "llama-3.1-70b", "--weights", "awq-int4", "--profile", "vllm", "--gpu", "h100", "--tp", "2"]),
    ("infer", ["infer", "--model", "llama-3.1-8b", "--weights", "q4_k_m", "--profile", "llama.cpp", "--gpu", "rtx-4090", "--max-context"]),
    ("models", ["models"]),
    ("hardware-list", ["hardware", "list"]),
    ("hardware-show", ["hardware", "show", "mi300x"]),
    ("prices", ["prices"]),
    ("scale", ["scale", "--budget", "1M", "--gpu", "h100"]),
    ("check", ["check", f"{data}/check/spec.json"]),
    ("plan-train", ["plan", "train", "--model", "llama-3.1-70b", "--tokens", "2T"]),
    ("plan-train", ["plan", "train", "--model", "llama-3.1-8b", "--tokens", "100B", "--objective", "time", "--budget", "50K"]),
    ("plan-train", ["plan", "train", "--model", "llama-3.1-8b", "--lora-rank", "16", "--dataset-tokens", "300M", "--epochs", "3", "--max-gpus", "8"]),
    ("plan-train", ["plan", "train", "--model", "llama-3.1-70b", "--max-gpus", "1"]),
    ("plan-infer", ["plan", "infer", "--model", "llama-3.1-70b", "--concurrency", "64"]),
    ("plan-infer", ["plan", "infer", "--model", "llama-3.1-8b", "--tokens-per-second", "20000", "--latency", "40ms"]),
    ("sweep", ["sweep", "infer", "--model", "llama-3.1-8b", "--context", "4k..128k", "--gpu", "rtx-4090", "--gpu", "h100-sxm"]),
    ("sweep", ["sweep", "train", "--model", "llama-3.2-1b", "--batch", "1..8", "--seq", "1k,4k", "--gpu", "l4"]),
    ("sweep", ["sweep", "infer", "--model", "llama-3.1-8b", "--profile", "vllm", "--batch", "1,64", "--context", "8k", "--gpu", "l40s"]),
    ("infer", ["infer", "--model", "llama-3.1-8b", "--gpu", "h100", "--", "vllm", "serve", "m", "-tp", "2", "--port", "1"]),
    ("train", ["train", "--model", "gpt2", "--", "deepspeed", "--num_gpus", "2", "t.py", "--bf16", "--deepspeed",
               f"{data}/launch/ds_config_zero2.json"]),
]
failed = 0
for name, args in cases:
    schema = json.loads(subprocess.run([binary, "schema", name], capture_output=True, text=True, check=True).stdout)
    # --format json before an imported command's "--" (after it, the words are the command's).
    cut = args.index("--") if "--" in args else len(args)
    p = subprocess.run([binary] + args[:cut] + ["--format", "json"] + args[cut:], capture_output=True, text=True)
    try:
        jsonschema.validate(json.loads(p.stdout), schema)
        print(f"ok   {name}: {' '.join(args)}")
    except Exception as e:  # noqa: BLE001 - report every failure
        failed += 1
        print(f"FAIL {name}: {' '.join(args)}: {str(e).splitlines()[0]}")
print(f"{len(cases) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
