#!/usr/bin/env python3
"""Golden outputs: the full JSON of every measured case and of a sweep over models, recipes and layouts.

usage: golden.py GPUPLAN_BINARY [--update]

Without --update, runs every command and compares its stdout and exit status with tests/data/golden/outputs.txt
byte for byte; prints the first differences and exits 1 on any. With --update, rewrites the file. A refactor must
leave it unchanged; an intended change of numbers regenerates it in a commit of its own that says why.

The file is line-oriented so that a regeneration's diff holds only the lines that changed (one JSON line per case
made every regeneration rewrite ~11 MB, and a session's diffs outgrew what a submission may carry):
    ### ["train", "--model", ...]       the command's arguments as a JSON array
    rc 0                                its exit status
    stdout                              then each line of stdout behind "| "
    | {
    stderr                              then each line of stderr behind "| "
    | gpuplan: ...
A stream that does not end in a newline has "\\ no newline at end" after its last line.
"""
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "data", "golden", "outputs.txt")
NO_NEWLINE = "\\ no newline at end"
sys.path.insert(0, os.path.join(ROOT, "tests", "calibration"))
import score  # noqa: E402  (the calibration scorer's command builder)


def measured_commands():
    cal = os.path.join(ROOT, "tests", "data", "calibration")
    for name in sorted(os.listdir(cal)):
        if not name.endswith(".jsonl"):
            continue
        for line in open(os.path.join(cal, name)):
            if not line.strip():
                continue
            c = json.loads(line)
            c["config"] = os.path.join(cal, c["config"])
            # Paths relative to the repository (the commands run there): the file is the same in any clone.
            yield [os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in score.command("BIN", c)[1:]]


def sweep_commands():
    j = ["--format", "json"]
    models = ["gpt2", "llama-3.2-1b", "llama-3.1-8b", "gemma-2-2b", "mixtral-8x7b", "phi-3-mini", "qwen2.5-0.5b",
              "deepseek-v3"]
    recipes = [[], ["--precision", "amp-bf16"], ["--precision", "pure-bf16", "--optimizer", "adamw-fused"],
               ["--precision", "fp32", "--optimizer", "sgd-momentum"], ["--grad-checkpointing"],
               ["--recompute", "selective"], ["--attention", "eager", "--seq", "1024"],
               ["--lora-rank", "16"], ["--lora-rank", "8", "--lora-targets", "all-linear", "--qlora"],
               ["--optimizer", "adafactor"], ["--optimizer", "adamw-8bit"], ["--optimizer", "lion"],
               ["--precision", "fp8", "--batch", "2"]]
    for m in models:
        for r in recipes:
            yield ["train", "--model", m] + r + j
    layouts = [["--gpus", "8"], ["--gpus", "8", "--zero", "1"], ["--gpus", "8", "--zero", "2"],
               ["--gpus", "8", "--zero", "3"], ["--gpus", "8", "--zero", "3", "--offload-optimizer", "cpu"],
               ["--gpus", "8", "--zero", "3", "--offload-optimizer", "nvme", "--offload-params", "cpu"],
               ["--gpus", "8", "--tp", "2"], ["--gpus", "8", "--tp", "4", "--sp"],
               ["--gpus", "8", "--pp", "4", "--grad-accum", "8"],
               ["--gpus", "8", "--pp", "2", "--vpp", "2", "--grad-accum", "4"],
               ["--gpus", "8", "--cp", "2", "--seq", "8192"], ["--gpus", "8", "--nodes", "2", "--fsdp", "hybrid_shard"],
               ["--gpus", "8", "--tp", "2", "--pp", "2", "--zero", "1", "--grad-accum", "4", "--grad-checkpointing"],
               ["--gpus", "8", "--zero", "2", "--precision", "amp-bf16", "--grad-accum", "2"]]
    for m in ["llama-3.1-8b", "qwen2.5-0.5b", "gemma-2-2b"]:
        for lay in layouts:
            yield ["train", "--model", m] + lay + j
    for lay in [["--gpus", "8", "--ep", "8", "--zero", "1"], ["--gpus", "8", "--ep", "2", "--tp", "2"]]:
        yield ["train", "--model", "mixtral-8x7b"] + lay + j
    yield ["train", "--model", "deepseek-v3", "--gpus", "8", "--nodes", "64", "--tp", "8", "--pp", "8", "--ep", "8",
           "--grad-accum", "16", "--zero", "1"] + j
    for p in ["7B", "70B", "125M", "1.5e9"]:
        yield ["train", "--params", p, "--precision", "bf16"] + j
    yield ["train", "--model", "llama-3.1-8b", "--gpu", "h100", "--tokens", "100B", "--gpus", "8"] + j
    yield ["train", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--nodes", "4", "--tp", "8",
           "--zero", "1", "--tokens", "1T", "--provider", "aws"] + j
    yield ["train", "--params", "7B", "--precision", "bf16"]  # the README's command, as a table
    # Serving.
    for m in ["llama-3.2-1b", "llama-3.1-8b", "mixtral-8x7b", "gemma-2-9b", "deepseek-v3", "gpt2"]:
        for r in [[], ["--batch", "8", "--prompt-len", "4096", "--new-tokens", "256"],
                  ["--profile", "vllm", "--gpu", "h100", "--weights", "fp8", "--kv-dtype", "fp8"],
                  ["--profile", "vllm", "--gpu", "h100", "--tp", "2", "--context", "8192"],
                  ["--profile", "llama.cpp", "--weights", "q4_k_m", "--gpu", "rtx-4090"],
                  ["--weights", "awq-int4", "--gpu", "a100-80gb", "--max-batch"],
                  ["--weights", "nf4", "--chunked-prefill", "512", "--prompt-len", "8192"]]:
            yield ["infer", "--model", m] + r + j
    # Planning.
    yield ["plan", "train", "--model", "llama-3.1-8b", "--tokens", "100B"] + j
    yield ["plan", "train", "--model", "llama-3.1-70b", "--tokens", "2T"] + j
    yield ["plan", "train", "--model", "mixtral-8x7b", "--tokens", "500B", "--objective", "time"] + j
    yield ["plan", "infer", "--model", "llama-3.1-70b", "--concurrency", "64", "--prompt-len", "4096",
           "--new-tokens", "512"] + j


def run(binary, args):
    p = subprocess.run([binary] + args, capture_output=True, text=True, timeout=120, cwd=ROOT)
    return {"args": args, "rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}


def write_stream(f, name, text):
    f.write(name + "\n")
    if not text:
        return
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        f.write("| " + line + "\n")
    if not text.endswith("\n"):
        f.write(NO_NEWLINE + "\n")


def write_golden(path, outputs):
    with open(path, "w") as f:
        for g in outputs:
            f.write("### " + json.dumps(g["args"]) + "\n")
            f.write(f"rc {g['rc']}\n")
            write_stream(f, "stdout", g["stdout"])
            write_stream(f, "stderr", g["stderr"])


def read_golden(path):
    """The records write_golden wrote, in order."""
    out, cur, stream = [], None, None
    for raw in open(path):
        line = raw[:-1] if raw.endswith("\n") else raw
        if line.startswith("### "):
            cur = {"args": json.loads(line[4:]), "rc": None, "stdout": "", "stderr": ""}
            out.append(cur)
        elif line.startswith("rc "):
            cur["rc"] = int(line[3:])
        elif line in ("stdout", "stderr"):
            stream = line
        elif line.startswith("| "):
            cur[stream] += line[2:] + "\n"
        elif line == NO_NEWLINE:
            cur[stream] = cur[stream][:-1]
        else:
            raise ValueError(f"{path}: unexpected line {line!r}")
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(argv[1])
    cmds = list(measured_commands()) + list(sweep_commands())
    # One process per command, as many at once as the machine has cores (the commands are independent; the
    # sanitizer build's processes are slow to start, and this test is the last one left running).
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        got = list(pool.map(lambda c: run(binary, c), cmds))
    if "--update" in argv:
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        write_golden(GOLDEN, got)
        print(f"wrote {len(got)} outputs to {os.path.relpath(GOLDEN, ROOT)}")
        return 0
    want = read_golden(GOLDEN)
    diffs = 0
    if [w["args"] for w in want] != [g["args"] for g in got]:
        print("the list of commands changed: run golden.py --update in a commit that says why")
        return 1
    for w, g in zip(want, got):
        if w != g:
            diffs += 1
            if diffs <= 5:
                print("differs:", " ".join(g["args"]))
                for k in ("rc", "stdout", "stderr"):
                    if w[k] != g[k]:
                        a, b = w[k], g[k]
                        if isinstance(a, str):
                            i = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
                            a, b = a[max(0, i - 80):i + 80], b[max(0, i - 80):i + 80]
                        print(f"  {k}: was {a!r}\n  {k}: now {b!r}")
    print(f"{'ok' if not diffs else 'changed'}: {len(got)} outputs, {diffs} differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
