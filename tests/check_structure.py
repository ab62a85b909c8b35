#!/usr/bin/env python3
"""check_structure.py - the shape of the source tree, checked.

Two graphs are read from a build:
  - includes: which folder's headers each source and header includes
    (#include "x.h", resolved to the folder that holds x.h);
  - links: which object file uses a symbol that another defines (nm on the
    objects of the build's libraries and of the GPU module).
Folders may only depend downwards, as the README's map says:

    app -> ui -> src -> gpu (src only through gpu/gpu.h: it is loaded at
                              run time, never linked)
                     -> models, collectives -> trace

and no folder may hold a loop of files that need each other (a strongly
connected set of object files in the link graph). The script prints the
folder graph with the number of file-to-file arrows on each edge, then any
violation, and exits 1 if there is one.

Usage: tests/check_structure.py BUILD_DIR
"""
import os
import re
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["trace", "models", "collectives", "gpu", "src", "ui", "app"]
ALLOWED = {
    "trace": {"trace"},
    "models": {"models"},
    "collectives": {"collectives", "trace"},
    "gpu": {"gpu", "models", "collectives", "trace"},
    "src": {"src", "gpu", "models", "collectives", "trace"},
    "ui": {"ui", "src", "gpu", "models", "collectives", "trace"},
    "app": {"app", "ui", "src", "gpu", "models", "collectives", "trace"},
}
# src reaches gpu/ through its interface header only: the module is loaded
# with dlopen, never linked
SRC_MAY_INCLUDE_FROM_GPU = {"gpu.h"}


def folder_of(path):
    rel = os.path.relpath(path, ROOT)
    top = rel.split(os.sep)[0]
    return top if top in FOLDERS else None


def include_graph():
    headers = {}
    for f in FOLDERS:
        for name in os.listdir(os.path.join(ROOT, f)):
            if name.endswith(".h"):
                headers.setdefault(name, f)
    edges, bad = defaultdict(int), []
    for f in FOLDERS:
        for name in sorted(os.listdir(os.path.join(ROOT, f))):
            if not name.endswith((".c", ".h", ".cu")):
                continue
            with open(os.path.join(ROOT, f, name), encoding="utf-8") as fh:
                for line in fh:
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or m.group(1) not in headers:
                        continue
                    to = headers[m.group(1)]
                    if to == f:
                        continue
                    edges[(f, to)] += 1
                    ok = to in ALLOWED[f]
                    if f == "src" and to == "gpu":
                        ok = m.group(1) in SRC_MAY_INCLUDE_FROM_GPU
                    if not ok:
                        bad.append("%s/%s includes %s from %s/, a folder above it" % (f, name, m.group(1), to))
    return edges, bad


def objects(build):
    found = []
    for dirpath, _, names in os.walk(os.path.join(build, "CMakeFiles")):
        if not re.search(r"CMakeFiles/(ddp_\w+|ddptop_gpu|ddptop)\.dir", dirpath):
            continue
        for n in names:
            if n.endswith(".o"):
                obj = os.path.join(dirpath, n)
                src = os.path.join(ROOT, re.sub(r"^.*?\.dir/", "", obj)[: -len(".o")])
                if os.path.exists(src):  # objects of removed sources linger in a build
                    found.append((obj, src))
    return found


def link_graph(build):
    defs, uses = {}, defaultdict(set)
    objs = objects(build)
    if not objs:
        sys.exit("check_structure: no object files under %s (build it first)" % build)
    for obj, src in objs:
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                uses[src].add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDRB":
                defs.setdefault(parts[2], src)
    graph = defaultdict(set)
    for src, syms in uses.items():
        for s in syms:
            to = defs.get(s)
            if to and to != src:
                graph[src].add(to)
    return graph, [s for _, s in objs]


def loops(graph, nodes):
    """Strongly connected sets of more than one file (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    inc, bad = include_graph()
    graph, nodes = link_graph(sys.argv[1])
    links = defaultdict(int)
    for a, tos in graph.items():
        for b in tos:
            fa, fb = folder_of(a), folder_of(b)
            if fa and fb and fa != fb:
                links[(fa, fb)] += 1
                if fb not in ALLOWED[fa] or (fa == "src" and fb == "gpu"):
                    bad.append("%s uses %s, in a folder above it" % (os.path.relpath(a, ROOT), os.path.relpath(b, ROOT)))
    print("folder graph (file arrows: includes / links):")
    for a, b in sorted(set(inc) | set(links), key=lambda e: (FOLDERS.index(e[0]), FOLDERS.index(e[1]))):
        print("  %-11s -> %-11s %3d / %3d" % (a, b, inc.get((a, b), 0), links.get((a, b), 0)))
    for comp in loops(graph, nodes):
        bad.append("a loop of %d files: %s" % (len(comp), ", ".join(os.path.relpath(c, ROOT) for c in comp)))
    for b in bad:
        print("VIOLATION: " + b)
    print("%d violations" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
