#!/usr/bin/env python3
"""Regenerate docs/engines-accuracy.md: gpuplan's engine profiles against the engines' own start-up logs.

usage: python3 tools/engines_report.py build/gpuplan [docs/engines-accuracy.md]
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = argv[2] if len(argv) > 2 else os.path.join(ROOT, "docs", "engines-accuracy.md")
    cmd = [sys.executable, os.path.join(ROOT, "tests", "engines", "score_engines.py"), argv[1], "--quiet", "--markdown", out]
    return subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
