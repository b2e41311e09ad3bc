#!/usr/bin/env python3
"""Score gpuplan's serving speed against measured and published points.

usage: score_throughput.py GPUPLAN [--measured F.jsonl ...] [--published F.jsonl ...] [--max-median PCT]
                           [--max-worst PCT] [--markdown OUT.md] [--quiet]

Measured points (tests/data/calibration/measured_*.jsonl, mode infer, with measured.decode_step_seconds and
prefill_seconds): gpuplan infer with the case's workload and --gpu h100-sxm or h200 by the GPU it ran on; two
points a case, the decode step (throughput.per_token_latency_seconds) and the prefill (time_to_first_token_seconds).

Published points (tests/data/throughput/*.jsonl): each line has `args` (gpuplan infer flags reproducing the setup),
`metric` and `value`: tg_tokens_per_s (decode tokens/s of one sequence: 1 / per-token latency), pp_tokens_per_s
(prompt tokens/s), tpot_ms (per-token latency), ttft_ms, and the metrics of one whole request (prefill, then
new_tokens − 1 decode steps: gpuplan's time to first token + (new_tokens − 1) × its per-token latency):
output_tokens_per_s (new tokens / wall), e2e_tokens_per_s ((prompt + new tokens) / wall), e2e_latency_s and
e2e_latency_ms (the wall). Lines without `args` are kept as data but not scored.

Held out: a case (a published id, a measured case's name) is held out when int(sha256(id), 16) % 3 == 0, the rule
of tests/data/engines/collected/README.md, fixed before any modelling; no constant may be fitted on it. A
published line's `split` must agree with the rule. Limits apply to all points (--max-median, --max-worst) and to
the held-out ones alone (--max-heldout-median, --max-heldout-worst).

The error is in time: predicted / truth − 1 (+ means gpuplan says slower). Exits 1 when a limit is exceeded, a
point fails to run or a split disagrees with the rule.
"""
import hashlib, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "calibration"))
from score import command  # noqa: E402  (the memory scorer's workload → flags mapping)

GPU_IDS = {"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H200": "h200"}
# Metrics of one whole request: truth in seconds from (value, prompt, new tokens).
WHOLE_REQUEST = {"output_tokens_per_s": lambda v, p, n: n / v, "e2e_tokens_per_s": lambda v, p, n: (p + n) / v,
                 "e2e_latency_s": lambda v, p, n: v, "e2e_latency_ms": lambda v, p, n: v / 1000.0}


def split_of(case_id):
    return "heldout" if int(hashlib.sha256(case_id.encode("utf-8")).hexdigest(), 16) % 3 == 0 else "fit"


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
        c["engine"], c["split"] = "hf", split_of(c["name"])
        yield c["name"] + " decode", cmd, "throughput.per_token_latency_seconds", m["decode_step_seconds"], c
        yield c["name"] + " prefill", cmd, "throughput.time_to_first_token_seconds", m["prefill_seconds"], c


def published_points(binary, path):
    for c in jsonl(path):
        if c.get("split") and c["split"] != split_of(c["id"]):
            raise ValueError(f"{c['id']}: split {c['split']} disagrees with the hash rule ({split_of(c['id'])})")
        if not c.get("args"):
            continue
        c["split"] = split_of(c["id"])
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
        elif metric in WHOLE_REQUEST:
            new = float(c["new_tokens"])
            yield c["id"], cmd, f"whole_request:{new}", WHOLE_REQUEST[metric](v, float(c["prompt_len"]), new), c


def predicted(out, field):
    t = out["throughput"]
    if field == "prefill_seconds_per_token":
        return 1.0 / t["prefill_tokens_per_s"]
    if field.startswith("whole_request:"):  # the prefill makes the first token, each decode step one more
        return t["time_to_first_token_seconds"] + (float(field.split(":")[1]) - 1) * t["per_token_latency_seconds"]
    node = out
    for k in field.split("."):
        node = node[k]
    return node


def summary(rows):
    errs = sorted(abs(r["error"]) for r in rows)
    return {"n": len(rows), "moe": sum(r["moe"] for r in rows),
            "median": statistics.median(errs) * 100 if errs else 0.0, "worst": errs[-1] * 100 if errs else 0.0}


def groups(rows):
    """(label, rows) for all points, each half, and each engine × dense/MoE within a half."""
    out = [("all", rows)]
    for half in ("fit", "heldout"):
        part = [r for r in rows if r["split"] == half]
        out.append((half, part))
        for engine in sorted({r["engine"] for r in part}):
            for moe in (False, True):
                sub = [r for r in part if r["engine"] == engine and r["moe"] == moe]
                if sub:
                    out.append((f"{half} {engine} {'MoE' if moe else 'dense'}", sub))
    return out


def parse_args(argv):
    sources, limits, markdown, quiet, i = [], {}, None, False, 2
    while i < len(argv):
        a = argv[i]
        if a in ("--measured", "--published"):
            sources.append((a[2:], argv[i + 1])); i += 2
        elif a in ("--max-median", "--max-worst", "--max-heldout-median", "--max-heldout-worst"):
            limits[a[6:]] = float(argv[i + 1]); i += 2
        elif a == "--markdown":
            markdown = argv[i + 1]; i += 2
        elif a == "--quiet":
            quiet = True; i += 1
        else:
            raise ValueError(f"unknown argument {a}")
    return sources, limits, markdown, quiet


def score(binary, sources, quiet):
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
                         "split": c["split"], "engine": c["engine"],
                         "bound": out["throughput"].get("decode_bound", ""), "moe": bool(out["model"].get("moe")),
                         "source": c.get("source", os.path.relpath(path, ROOT))})
            if not quiet:
                print(f"{name:70s} {c['split']:7s} truth {truth*1e3:10.2f} ms  gpuplan {pred*1e3:10.2f} ms  "
                      f"{err*100:+7.1f} %")
    return rows, failures


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    try:
        sources, limits, markdown, quiet = parse_args(argv)
        rows, failures = score(argv[1], sources, quiet)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2 if "unknown argument" in str(e) else 1
    if not rows:
        print("over: no point ran")
        return 1
    table = groups(rows)
    whole, held = summary(rows), summary([r for r in rows if r["split"] == "heldout"])
    ok = (not failures and whole["median"] <= limits.get("median", 1e9) and whole["worst"] <= limits.get("worst", 1e9)
          and held["median"] <= limits.get("heldout-median", 1e9) and held["worst"] <= limits.get("heldout-worst", 1e9))
    for label, part in table:
        g = summary(part)
        print(f"{label:24s} {g['n']:4d} points ({g['moe']:3d} MoE): |error| median {g['median']:5.1f} %, "
              f"worst {g['worst']:6.1f} %")
    print(f"{'ok' if ok else 'over'}: {whole['n']} points ({whole['moe']} MoE), {len(failures)} failed; "
          f"|error| median {whole['median']:.1f} %, worst {whole['worst']:.1f} %; held out {held['n']}: "
          f"median {held['median']:.1f} %, worst {held['worst']:.1f} %")
    if markdown:
        write_markdown(markdown, rows, table)
    return 0 if ok else 1


def write_markdown(path, rows, table):
    lines = ["# Serving speed accuracy", "",
             "Generated by `tests/throughput/score_throughput.py`; do not edit. Error in time: + means gpuplan says "
             "slower than measured or published. Measured points: HF generate on an H100 "
             "(tests/data/calibration/measured_g2.jsonl, measured_g4.jsonl) and an H200 (measured_g5.jsonl), each "
             "scored on the GPU it ran on; published ones: "
             "tests/data/throughput/published.jsonl (each with its source, the line it was read from and the gpuplan "
             "flags that reproduce it). A case is held out when int(sha256(id), 16) % 3 == 0, chosen before "
             "modelling: no constant is fitted on it.", "",
             "| points | n | MoE | median \|error\| | worst \|error\| |", "| --- | --- | --- | --- | --- |"]
    for label, part in table:
        g = summary(part)
        lines.append(f"| {label} | {g['n']} | {g['moe']} | {g['median']:.1f} % | {g['worst']:.1f} % |")
    lines += ["", "| point | half | truth | gpuplan | error | bound (gpuplan) | source |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['split']} | {r['truth']*1e3:.2f} ms | {r['predicted']*1e3:.2f} ms | "
                     f"{r['error']*100:+.1f} % | {r['bound']} | {r['source']} |")
    open(path, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
