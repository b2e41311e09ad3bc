#!/usr/bin/env python3
"""Regenerate docs/time-accuracy.md: gpuplan's training time against the published runs and the measured steps.

usage: python3 tools/time_report.py build/gpuplan [docs/time-accuracy.md]
"""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = argv[2] if len(argv) > 2 else os.path.join(ROOT, "docs", "time-accuracy.md")
    cmd = [sys.executable, os.path.join(ROOT, "tests", "time", "score_time.py"), argv[1], "--quiet", "--markdown", out,
           "--published", os.path.join(ROOT, "tests", "data", "time", "published_runs.jsonl")]
    for f in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "calibration", "*.jsonl"))):
        cmd += ["--measured", f]
    return subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
