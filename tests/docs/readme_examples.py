#!/usr/bin/env python3
"""The README's examples are real: each `$ gpuplan ...` line of its code blocks runs with this binary, and every
line shown after it (but a lone "…", which marks lines left out) appears in the real output, in order; a command
ending in `; echo $?` shows its exit status last.

usage: readme_examples.py GPUPLAN_BINARY README.md
"""
import shlex
import subprocess
import sys

binary, readme = sys.argv[1:3]


def examples(text):
    """(command, shown lines) for each `$ gpuplan` line in a fenced block."""
    out, block, cmd = [], False, None
    for line in text.splitlines():
        if line.startswith("```"):
            if cmd:
                out.append(cmd)
            block, cmd = not block, None
        elif block and line.startswith("$ gpuplan "):
            if cmd:
                out.append(cmd)
            cmd = (line[2:], [])
        elif block and cmd:
            cmd[1].append(line.rstrip())
    return out


failed = 0
found = examples(open(readme, encoding="utf-8").read())
for command, shown in found:
    status = None
    if command.endswith("; echo $?"):
        command, status = command[: -len("; echo $?")], shown.pop()
    p = subprocess.run([binary] + shlex.split(command)[1:], capture_output=True, text=True)
    real = [line.rstrip() for line in (p.stdout + p.stderr).splitlines()]
    at, missing = 0, None
    for line in shown:
        if line.strip() in ("…", ""):
            continue
        try:
            at = real.index(line, at) + 1
        except ValueError:
            missing = line
            break
    problems = []
    if missing is not None:
        problems.append(f"shows a line the command does not print (or not in this order): {missing!r}")
    if status is not None and status != str(p.returncode):
        problems.append(f"shows exit status {status}, the command exits {p.returncode}")
    if status is None and p.returncode not in (0, 1):
        problems.append(f"exits {p.returncode}: {p.stderr.strip()}")
    for problem in problems:
        print(f"FAIL {command}: {problem}")
    failed += bool(problems)
if not found:
    print("FAIL no `$ gpuplan` examples in the README")
    failed = 1
print(f"{len(found)} README examples, {failed} failed")
sys.exit(1 if failed else 0)
