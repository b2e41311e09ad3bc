#!/usr/bin/env python3
"""Whole-process time of gpuplan commands against an empty C++ process, interleaved.

usage: process_bench.py GPUPLAN_BINARY [--rounds N] [--only WORD]

Builds an empty C++ program (g++ -O2) as the baseline, then runs every command and the baseline in turn, N rounds
(default 40), and prints each command's median wall time and its ratio to the baseline's median. Interleaving
keeps the machine's drift out of the ratios. --only keeps the commands with WORD among their words (repeatable),
for more rounds of a few. A benchmark, not a test: nothing here is asserted.
"""
import os, statistics, subprocess, sys, tempfile, time

COMMANDS = [
    ["--version"],
    ["models"],
    ["train", "--params", "7B", "--precision", "bf16"],
    ["train", "--params", "7B", "--precision", "bf16", "--gpu", "h100-sxm"],
    ["train", "--model", "llama-3.2-1b"],
    ["train", "--model", "llama-3.1-8b"],
    ["train", "--model", "llama-3.1-70b"],
    ["train", "--model", "llama-3.1-405b"],
    ["train", "--model", "llama-3.1-405b", "--gpus", "8", "--nodes", "16", "--tp", "8", "--pp", "16",
     "--grad-accum", "16", "--grad-checkpointing"],
    # Fit advice (advice.cpp): a full estimate per change and pair of changes tried.
    ["train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--fine-tune"],
    ["train", "--model", "qwen2.5-32b", "--lora-rank", "16", "--qlora", "--seq", "4096", "--gpu", "rtx-4090"],
    ["infer", "--model", "llama-3.1-8b"],
    ["infer", "--model", "llama-3.1-405b"],
    ["plan", "train", "--model", "llama-3.1-70b", "--tokens", "2T"],
]


def empty_program():
    d = tempfile.mkdtemp()
    src, exe = os.path.join(d, "empty.cpp"), os.path.join(d, "empty")
    open(src, "w").write("int main() { return 0; }\n")
    subprocess.run(["g++", "-O2", src, "-o", exe], check=True)
    return exe


def once(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(argv[1])
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 40
    only = [argv[i + 1] for i, a in enumerate(argv) if a == "--only" and i + 1 < len(argv)]
    commands = [c for c in COMMANDS if not only or any(w in c for w in only)]
    if not commands:
        print(f"process_bench: no command has any of the words {only} (--only matches whole words)", file=sys.stderr)
        return 2
    base = empty_program()
    times = {i: [] for i in range(len(commands))}
    empty = []
    for _ in range(rounds):
        for i, c in enumerate(commands):
            empty.append(once([base]))
            times[i].append(once([binary] + c))
    e = statistics.median(empty)
    print(f"empty C++ process: {e * 1000:.2f} ms (median of {len(empty)})")
    for i, c in enumerate(commands):
        m = statistics.median(times[i])
        print(f"{m * 1000:8.2f} ms  {m / e:5.1f}x  gpuplan {' '.join(c)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
