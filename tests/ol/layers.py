#!/usr/bin/env python3
"""The driver's layers run one way: no two files of tools/ol include or call
each other in a circle (issue 7, item 7).

A module is a file's name without .c or .h (check.c and check.h are one).
Module A depends on B when a file of A #includes "B.h", or when A's object
uses a symbol that B's object defines (nm). Any strongly connected set of
two or more modules is a circle: each is printed with the edges that make
it, and the script exits 1.

    tests/ol/layers.py SOURCE_DIR OBJECT_DIR
"""
import os
import re
import subprocess
import sys


def stem(name):
    return os.path.splitext(os.path.basename(name))[0]


def include_edges(src_dir):
    edges = {}
    for name in sorted(os.listdir(src_dir)):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(src_dir, name), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"/]+)\.h"', line)
                if m and os.path.exists(os.path.join(src_dir, m.group(1) + ".h")):
                    a, b = stem(name), m.group(1)
                    if a != b:
                        edges.setdefault((a, b), f"{name}:{lineno} includes {m.group(1)}.h")
    return edges


def symbols(obj):
    out = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRC" and parts[1].isupper():
            defined.add(parts[2])
    return defined, used


def call_edges(src_dir, obj_dir):
    # only the objects of today's sources: a stale one would speak for a file that is gone
    objs = {stem(n): os.path.join(obj_dir, n) for n in sorted(os.listdir(obj_dir))
            if n.endswith(".o") and os.path.exists(os.path.join(src_dir, stem(n) + ".c"))}
    if not objs:
        sys.exit(f"layers: no object files in {obj_dir}: build ol first")
    table = {m: symbols(o) for m, o in objs.items()}
    owner = {}
    for m, (defined, _) in table.items():
        for s in defined:
            owner[s] = m
    edges = {}
    for m, (_, used) in table.items():
        for s in sorted(used):
            if s in owner and owner[s] != m:
                edges.setdefault((m, owner[s]), f"{m}.o calls {s} (defined in {owner[s]}.o)")
    return edges


def circles(nodes, edges):
    """Tarjan's strongly connected components with more than one node."""
    succ = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src_dir, obj_dir = sys.argv[1], sys.argv[2]
    edges = include_edges(src_dir)
    for k, v in call_edges(src_dir, obj_dir).items():
        edges.setdefault(k, v)
    nodes = {a for a, _ in edges} | {b for _, b in edges}
    found = circles(nodes, edges)
    for comp in found:
        print("FAIL circle: " + " <-> ".join(comp))
        for (a, b), why in sorted(edges.items()):
            if a in comp and b in comp:
                print(f"     {why}")
    if found:
        print(f"layers: {len(found)} circle(s) among the modules of {src_dir}: "
              "move what both sides need into a module below them")
        return 1
    print(f"ok   layers: {len(nodes)} modules of {src_dir}, {len(edges)} dependencies, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
