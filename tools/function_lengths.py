#!/usr/bin/env python3
"""Lengths of the functions in the library's headers, longest first.

usage: function_lengths.py [--max N] [--top K] [DIR]

A function is a definition whose head has a parameter list and whose body opens with '{' at the end of a line;
its length runs from its first line to its closing brace (lambdas inside count towards it). Control statements,
lambdas and type definitions are not functions. Exits 1 when one is longer than --max (default 120).
"""
import os, re, sys

CONTROL = re.compile(r"^\s*(if|for|while|switch|else|do|try|catch|namespace|struct|class|enum|union|return)\b")
HEAD = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(->\s*[\w:<>]+)?\s*(:.*)?\{\s*$")


def strip(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def functions(path):
    lines = [strip(l) for l in open(path, encoding="utf-8")]
    out = []
    for i, line in enumerate(lines):
        if not HEAD.search(line) or CONTROL.match(line) or re.search(r"\[[^\]]*\]\s*\(", line):
            continue
        # The head may span lines: look back to the line with the name.
        j = i
        while j > 0 and "(" not in lines[j]:
            j -= 1
        if CONTROL.match(lines[j]) or "=" in lines[j].split("(")[0]:
            continue
        depth, k = 0, i
        for k in range(i, len(lines)):
            depth += lines[k].count("{") - lines[k].count("}")
            if depth <= 0:
                break
        name = re.findall(r"([~\w:]+)\s*\(", lines[j])
        out.append((k - j + 1, f"{os.path.relpath(path)}:{j + 1}", name[0] if name else "?"))
    return out


def main(argv):
    limit, top, root = 120, 10, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")
    i = 1
    while i < len(argv):
        if argv[i] == "--max":
            limit = int(argv[i + 1]); i += 2
        elif argv[i] == "--top":
            top = int(argv[i + 1]); i += 2
        else:
            root = argv[i]; i += 1
    found = []
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".h"):
                found += functions(os.path.join(d, f))
    found.sort(reverse=True)
    for n, where, name in found[:top]:
        print(f"{n:5d}  {name}  {where}")
    over = [f for f in found if f[0] > limit]
    print(f"{'over' if over else 'ok'}: {len(found)} functions, {len(over)} longer than {limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
