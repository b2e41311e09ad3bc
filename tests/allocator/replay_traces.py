#!/usr/bin/env python3
"""Replay the caching-allocator traces recorded on a GPU (tests/data/calibration/traces/*.tsv.gz) through gpuplan's
allocator model (the trace_replay program) and compare the peak each reserved over the trace.

usage: replay_traces.py TRACE_REPLAY_BINARY

The real allocator started each trace with blocks cached from before generate (the model from nothing), so the
two agree exactly only where those blocks were not reused. Each trace has its limit below: those that agree
exactly must keep agreeing; the Llama 3.2 ones, where the two differ by 5–17 %, must not grow apart. Exits 1 when a limit is exceeded.
"""
import gzip, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "data", "calibration", "traces")
LIMITS = {  # |model / real − 1| in percent
    "g3-phimoe_8l-bf16-b16-p2048-n16-trace": 0.1,
    "g3-qwen3_next_8l-bf16-b8-p4096-n16-trace": 0.1,
    "g3-llama32_3b-bf16-b4-p16384-n16-trace": 10.0,
    # measured_s1: the shared set's GPT-2 and Qwen2.5-0.5B generations re-measured; on their own traces the model
    # reserves 12.6 % and 6.3 % more than the GPU added (the small pool's neighbours not yet explained): kept from growing.
    "s1-infer-gpt2-fp16-b16-s512-n64-trace": 13.0,
    "s1-infer-qwen25_0.5b-bf16-b32-s2048-n32-trace": 7.0,
    # measured_g5 (#45): 13 of 16 agree exactly; the three Llama 3.2 ones start from blocks cached before generate.
    "g5-glm45air_6l-bf16-b8-p4096-n16-trace": 0.1,
    "g5-gpt_oss_20b-bf16-b16-p1024-n16-eager-trace": 0.1,
    "g5-llama31_8b-bf16-b32-p4096-n16-trace": 0.1,
    "g5-llama4_scout_8l-bf16-b8-p2048-n16-trace": 0.1,
    "g5-phimoe_8l-bf16-b4-p4096-n16-trace": 0.1,
    "g5-phimoe_8l-bf16-b32-p1024-n16-trace": 0.1,
    "g5-phimoe_8l-bf16-b64-p2048-n16-trace": 0.1,
    "g5-qwen3_next_8l-bf16-b1-p16384-n16-trace": 0.1,
    "g5-qwen3_next_8l-bf16-b16-p2048-n16-trace": 0.1,
    "g5-qwen3_next_8l-bf16-b32-p1024-n16-trace": 0.1,
    "g5-qwen3moe_12l-bf16-b4-p16384-n16-trace": 0.1,
    "g5-qwen3moe_12l-bf16-b32-p2048-n16-trace": 0.1,
    "g5-qwen3moe_12l-bf16-b64-p1024-n16-trace": 0.1,
    "g5-llama32_1b-bf16-b64-p4096-n16-trace": 5.5,
    "g5-llama32_3b-bf16-b16-p8192-n16-trace": 6.1,
    "g5-llama32_3b-bf16-b1-p16384-n16-trace": 16.9,
}


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    ok = True
    for name, limit in LIMITS.items():
        data = gzip.open(os.path.join(TRACES, name + ".tsv.gz")).read()
        out = subprocess.run([argv[1]], input=data, capture_output=True, check=True).stdout.decode().split()
        model, real = float(out[1]), float(out[3])
        err = (model / real - 1) * 100
        good = abs(err) <= limit
        ok = ok and good
        print(f"{'ok  ' if good else 'OVER'} {name}: model {model / 2**30:.2f} GiB, GPU {real / 2**30:.2f} GiB, "
              f"{err:+.2f} % (limit {limit} %)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
