#!/usr/bin/env python3
"""Score gpuplan's serving speed against measured and published points.

usage: score_throughput.py GPUPLAN [--measured F.jsonl ...] [--published F.jsonl ...] [--max-median PCT]
                           [--max-worst PCT] [--markdown OUT.md] [--quiet]

Measured points (tests/data/calibration/measured_*.jsonl, mode infer, with measured.decode_step_seconds and
prefill_seconds): gpuplan infer with the case's workload and --gpu h100-sxm or h200 by the GPU it ran on; two
points a case, the decode step (throughput.per_token_latency_seconds) and the prefill (time_to_first_token_seconds).

Published points (tests/data/throughput/*.jsonl): each line has `args` (gpuplan infer flags reproducing the setup),
`metric` and `value`: tg_tokens_per_s (decode tokens/s of one sequence: 1 / per-token latency), pp_tokens_per_s
(prompt tokens/s), tpot_ms (per-token latency), ttft_ms. Lines without `args` are kept as data but not scored.

The error is in time: predicted / truth − 1 (+ means gpuplan says slower). Exits 1 when a limit is exceeded or a
point fails to run.
"""
import json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "calibration"))
from score import command  # noqa: E402  (the memory scorer's workload → flags mapping)

GPU_IDS = {"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H200": "h200"}


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)  # args name repo paths
    if p.returncode != 0:
        raise RuntimeError(((p.stderr or p.stdout).strip().splitlines() or ["failed"])[-1])
    return json.loads(p.stdout)


def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def measured_points(binary, path):
    base = os.path.dirname(os.path.abspath(path))
    for c in jsonl(path):
        m = c["measured"]
        if c["mode"] != "infer" or "decode_step_seconds" not in m:
            continue
        c["config"] = os.path.join(base, c["config"])
        cmd = command(binary, c)
        cmd[-2:-2] = ["--gpu", GPU_IDS[c["stack"]["gpu"]]]
        yield c["name"] + " decode", cmd, "throughput.per_token_latency_seconds", m["decode_step_seconds"], c
        yield c["name"] + " prefill", cmd, "throughput.time_to_first_token_seconds", m["prefill_seconds"], c


def published_points(binary, path):
    for c in jsonl(path):
        if not c.get("args"):
            continue
        cmd = [binary, "infer"] + c["args"] + ["--format", "json"]
        v, metric = float(c["value"]), c["metric"]
        if metric == "tg_tokens_per_s":
            yield c["id"], cmd, "throughput.per_token_latency_seconds", 1.0 / v, c
        elif metric == "pp_tokens_per_s":
            yield c["id"], cmd, "prefill_seconds_per_token", 1.0 / v, c
        elif metric == "tpot_ms":
            yield c["id"], cmd, "throughput.per_token_latency_seconds", v / 1000.0, c
        elif metric == "ttft_ms":
            yield c["id"], cmd, "throughput.time_to_first_token_seconds", v / 1000.0, c


def predicted(out, field):
    t = out["throughput"]
    if field == "prefill_seconds_per_token":
        return 1.0 / t["prefill_tokens_per_s"]
    node = out
    for k in field.split("."):
        node = node[k]
    return node


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    binary, sources, limits, markdown, quiet = argv[1], [], {}, None, False
    i = 2
    while i < len(argv):
        a = argv[i]
        if a in ("--measured", "--published"):
            sources.append((a[2:], argv[i + 1])); i += 2
        elif a in ("--max-median", "--max-worst"):
            limits[a[6:]] = float(argv[i + 1]); i += 2
        elif a == "--markdown":
            markdown = argv[i + 1]; i += 2
        elif a == "--quiet":
            quiet = True; i += 1
        else:
            print(f"unknown argument {a}", file=sys.stderr); return 2
    rows, failures = [], []
    for kind, path in sources:
        points = measured_points(binary, path) if kind == "measured" else published_points(binary, path)
        for name, cmd, field, truth, c in points:
            try:
                out = run_json(cmd)
                pred = predicted(out, field)
            except Exception as e:  # noqa: BLE001 - any failure to run or read is a failed point
                failures.append(name)
                print(f"FAIL {name}: {e}  ({' '.join(cmd[1:])})")
                continue
            err = pred / truth - 1
            rows.append({"name": name, "kind": kind, "truth": truth, "predicted": pred, "error": err,
                         "bound": out["throughput"].get("decode_bound", ""), "moe": bool(out["model"].get("moe")),
                         "source": c.get("source", os.path.relpath(path, ROOT))})
            if not quiet:
                print(f"{name:58s} truth {truth*1e3:9.2f} ms  gpuplan {pred*1e3:9.2f} ms  {err*100:+7.1f} %")
    ok = not failures
    if rows:
        errs = sorted(abs(r["error"]) for r in rows)
        med, worst = statistics.median(errs) * 100, errs[-1] * 100
        ok = ok and med <= limits.get("median", 1e9) and worst <= limits.get("worst", 1e9)
        moe = sum(1 for r in rows if r["moe"])
        print(f"{'ok' if ok else 'over'}: {len(rows)} points ({moe} MoE), {len(failures)} failed; "
              f"|error| median {med:.1f} %, worst {worst:.1f} %")
        if markdown:
            write_markdown(markdown, rows, med, worst)
    else:
        ok = False
        print("over: no point ran")
    return 0 if ok else 1


def write_markdown(path, rows, med, worst):
    lines = ["# Serving speed accuracy", "",
             "Generated by `tests/throughput/score_throughput.py`; do not edit. Error in time: + means gpuplan says "
             "slower than measured or published.", "",
             f"{len(rows)} points ({sum(r['moe'] for r in rows)} MoE): median |error| **{med:.1f} %**, "
             f"worst **{worst:.1f} %**. Measured points: HF generate on an H100 "
             "(tests/data/calibration/measured_g2.jsonl); published ones: tests/data/throughput/published.jsonl "
             "(each with its source and the gpuplan flags that reproduce it).", "",
             "| point | truth | gpuplan | error | bound (gpuplan) | source |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['truth']*1e3:.2f} ms | {r['predicted']*1e3:.2f} ms | {r['error']*100:+.1f} % "
                     f"| {r['bound']} | {r['source']} |")
    open(path, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
