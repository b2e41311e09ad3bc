#!/usr/bin/env python3
"""gpuplan sweep: --plot writes a well-formed SVG with what the chart promises: a bar segment per non-zero part and
point, each device's limit line, the last fit marked, both axis titles; a two-flag sweep draws one line per value.

usage: test_plot.py GPUPLAN_BINARY
"""
import json
import os
import pty
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
binary = sys.argv[1]
failed = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed.append(what)


def sweep(args, svg):
    report = json.loads(subprocess.run([binary, "sweep"] + args + ["--format", "json", "--plot", svg],
                                       capture_output=True, text=True, check=True).stdout)
    return report, ET.parse(svg).getroot()


with tempfile.TemporaryDirectory() as tmp:
    svg = f"{tmp}/one.svg"
    r, root = sweep(["infer", "--model", "llama-3.1-8b", "--context", "4k..128k", "--gpu", "rtx-4090", "--gpu", "h100-sxm"], svg)
    check(root.tag == NS + "svg", "the root element is <svg>")
    parts = 0
    for p in r["points"]:
        m = p["memory"]
        parts += sum(1 for v in m["components"].values() if v > 0) + (m["allocator_slack_bytes"] > 0) + (m["context_bytes"] > 0)
    bars = [e for e in root.iter(NS + "rect") if e.find(NS + "title") is not None]
    check(len(bars) == parts, f"one bar segment per non-zero part and point ({len(bars)} == {parts})")
    texts = " ".join("".join(e.itertext()) for e in root.iter(NS + "text"))
    check("memory per GPU (GiB)" in texts, "the y axis is titled with its unit")
    check("--context (KV tokens per sequence)" in texts, "the x axis is titled with the flag")
    check("▲ fits rtx-4090" in texts and "▲ fits h100-sxm" in texts, "the last fit is marked per device")
    largest = r["devices"][0]["largest"][0]["value"]
    check(f"largest --context {largest:,}" in texts, "the legend names the exact largest value")
    dashed = [e for e in root.iter(NS + "line") if e.get("stroke-dasharray")]
    check(len(dashed) == 4, "a limit line and a legend line per device")

    svg = f"{tmp}/two.svg"
    r, root = sweep(["train", "--model", "llama-3.2-1b", "--batch", "1..8", "--seq", "1k,2k,4k", "--gpu", "h100-sxm"], svg)
    check(len(list(root.iter(NS + "polyline"))) == 3, "a two-flag sweep draws one line per value of the second flag")

# On a terminal the table format starts with the chart, in colour unless NO_COLOR is set; piped, it does not.

def on_tty(args, env):
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(binary, [binary] + args, env)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


args = ["sweep", "infer", "--model", "llama-3.1-8b", "--context", "4k..128k", "--gpu", "rtx-4090", "--gpu", "h100-sxm"]
env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
tty = on_tty(args, env)
check("◀ largest that fits on rtx-4090" in tty and "\033[" in tty, "on a terminal: the chart, in colour")
plain = on_tty(args, dict(env, NO_COLOR="1"))
check("◀ largest that fits on rtx-4090" in plain and "\033[" not in plain, "NO_COLOR: the chart without colour")
piped = subprocess.run([binary] + args, capture_output=True, text=True).stdout
check("◀" not in piped and "rtx-4090: largest --context that fits" in piped, "piped: the table and answers only")
sys.exit(1 if failed else 0)
