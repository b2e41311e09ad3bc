#!/usr/bin/env python3
"""Regenerate docs/serving-speed-accuracy.md: gpuplan's serving speed against measured and published points.

usage: python3 tools/speed_report.py build/gpuplan [docs/serving-speed-accuracy.md]
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The points the ratchet test (throughput.serving_speed) scores: HF generate measured on H100s and an H200 and the
# published tables (llama.cpp, vLLM, SGLang, transformers) with gpuplan flags that reproduce them.
SOURCES = [("--measured", "tests/data/calibration/measured_g2.jsonl"),
           ("--measured", "tests/data/calibration/measured_g4.jsonl"),
           ("--measured", "tests/data/calibration/measured_g5.jsonl"),
           ("--measured", "tests/data/calibration/measured_g6.jsonl"),
           ("--measured", "tests/data/calibration/measured_g7.jsonl"),
           ("--measured", "tests/data/calibration/measured_g8.jsonl"),
           ("--published", "tests/data/throughput/published.jsonl")]


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = argv[2] if len(argv) > 2 else os.path.join(ROOT, "docs", "serving-speed-accuracy.md")
    cmd = [sys.executable, os.path.join(ROOT, "tests", "throughput", "score_throughput.py"), argv[1], "--quiet",
           "--markdown", out]
    for flag, path in SOURCES:
        cmd += [flag, os.path.join(ROOT, path)]
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
