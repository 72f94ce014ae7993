#!/usr/bin/env python3
"""The shape of the code, in figures (docs/architecture.md, "Figures").

Usage: python3 tests/arch/metrics.py [ROOT]

Reads the .c and .h files under ROOT/src (default: this checkout) and
prints: the largest .c files; the length of every function definition
(median, 90th percentile, largest); and the cycles between files, of
includes and of calls.  A file is a node; a call edge goes from a .c file
to the .c file that defines a function it calls (found by name: a
definition is a name at the start of a line followed by "(", after a
line holding its return type, as STYLE.md writes them; a static one is
seen only by its own file, so two files' static helpers of the same
name make no arrow).  A cycle is a
strongly connected set of more than one file; a file's own header and
the file count as one (merge/x.c and merge/x.h are the same node).
Text only, no compiler: an arrow can be missing (a call through a
pointer) or misplaced (a name used as a variable); the figures compare
trees measured the same way.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")
SRC = os.path.join(ROOT, "src")

DEF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(")
CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined"}


def files():
    for d, _, names in os.walk(SRC):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(d, n), SRC)


def node(path):
    return path[:-2]  # x.c and x.h are one node


def strip(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"'(\\.|[^'\\\n])'", "''", text)  # '"' opens no string
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def functions(lines):
    """(name, length) of every definition: from its name line to the
    closing brace at column 0."""
    out = []
    i = 0
    while i < len(lines):
        m = DEF.match(lines[i])
        if m and i > 0 and lines[i - 1].strip() and not lines[i].rstrip(
        ).endswith(";"):
            j = i
            while j < len(lines) and not lines[j].startswith("{"):
                if lines[j].rstrip().endswith(";"):
                    break
                j += 1
            if j < len(lines) and lines[j].startswith("{"):
                k = j
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                out.append((m.group(1), k - i + 2, i,
                            lines[i - 1].startswith("static")))
                i = k
        i += 1
    return out


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

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
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    sizes, lengths = [], []
    defined = {}  # function name -> node (functions other files see)
    local = {}  # node -> its static functions' names
    bodies = {}  # node -> text of its .c files
    incs = {}
    for f in files():
        text = open(os.path.join(SRC, f), errors="replace").read()
        clean = strip(text)
        lines = clean.split("\n")
        n = node(f)
        incs.setdefault(n, set())
        for line in text.split("\n"):
            m = INC.match(line)
            if m:
                target = node(m.group(1))
                if target != n and os.path.exists(
                        os.path.join(SRC, m.group(1))):
                    incs[n].add(target)
        if f.endswith(".c"):
            sizes.append((text.count("\n"), f))
            for name, length, _, static in functions(lines):
                lengths.append(length)
                if static:
                    local.setdefault(n, set()).add(name)
                else:
                    defined.setdefault(name, n)
            bodies[n] = bodies.get(n, "") + clean
    calls = {}
    for n, body in bodies.items():
        calls[n] = set()
        for m in CALL.finditer(body):
            name = m.group(1)
            if name in KEYWORDS or name in local.get(n, ()):
                continue
            target = defined.get(name)
            if target and target != n:
                calls[n].add(target)
    sizes.sort(reverse=True)
    lengths.sort()

    def pct(p):
        return lengths[min(len(lengths) - 1, int(p * len(lengths)))]

    print("files: %d .c under src/" % len(sizes))
    print("largest .c files: " + ", ".join(
        "%s %d" % (f, n) for n, f in sizes[:3]))
    print("function length (lines, %d functions): median %d, p90 %d, "
          "max %d" % (len(lengths), pct(0.5), pct(0.9), lengths[-1]))
    for what, graph in (("include", incs), ("call", calls)):
        cyc = sccs(graph)
        biggest = max(cyc, key=len) if cyc else []
        print("%s cycles between files: %d, %d files in them; largest "
              "%d files%s" % (what, len(cyc), sum(map(len, cyc)),
                              len(biggest),
                              (": " + " ".join(biggest)) if biggest and
                              len(biggest) <= 60 else ""))


main()
