#!/usr/bin/env python3
"""layer-calls.py [--quiet]: the calls between src/'s files, layer by layer.

The include test (tests/cli/layers.sh) keeps #include arrows pointing
down; this looks at calls. Every function src/*/*.c defines outside a
static scope is found with Universal Ctags (Debian's universal-ctags);
each identifier a file uses with a "(" after it, comments and strings
left out, that names such a function of another file is a call from
that file to the other. Calls through pointers (the algorithm tables,
callbacks) are not seen: those are the arrows that are allowed to point
up. A file's layer is its folder (src/lock/alock.c is in lock), and the
layers' order is layers.sh's names="...", so that one place says them.

Prints every call into a higher layer ("lock/lock.c (lock) ->
client/client.c (client): rl__client_topo") and every cycle among files
(files that call each other round a loop, however long: a strongly
connected part of the call graph), then a count line. Exits 1 when
there is either, 0 when there is none, 2 when it cannot look.
"""
import os
import re
import shutil
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(TOP, "src")
LAYERS_SH = os.path.join(TOP, "tests", "cli", "layers.sh")


def layers():
    """The layers' names bottom up, from layers.sh; and src/'s .c files,
    "folder/file.c", of the folders that are layers."""
    text = open(LAYERS_SH).read()
    names = re.search(r'^names="([^"]*)"', text, re.M).group(1).split()
    files = sorted(os.path.join(d, f) for d in names
                   if os.path.isdir(os.path.join(SRC, d))
                   for f in os.listdir(os.path.join(SRC, d))
                   if f.endswith(".c"))
    if not files:
        raise OSError("no .c file in src/'s layer folders %s" % names)
    return names, files


def layer(f, names):
    """The layer number of "folder/file.c", 1 at the bottom."""
    return names.index(f.split("/")[0]) + 1


def functions(files):
    """Function name -> the file defining it, for those not static."""
    # Debian's universal-ctags installs ctags-universal, and ctags as an
    # alternative that another ctags package may hold.
    ctags = shutil.which("ctags-universal") or "ctags"
    out = subprocess.run(
        [ctags, "-x", "--c-kinds=f", "--language-force=C"] + files,
        cwd=SRC, capture_output=True, text=True, check=True).stdout
    defs = {}
    for line in out.splitlines():
        m = re.match(r"(\S+)\s+function\s+\d+\s+(\S+)\s+(.*)", line)
        if not m or m.group(3).lstrip().startswith("static"):
            continue
        # "redislock_err(redislock_acquire)(...)", a definition whose name
        # is in parentheses (the header makes it a macro), is read by
        # ctags as one of a function named after its type.
        p = re.match(r"\s*\w+\((\w+)\)\s*\(", m.group(3))
        defs[p.group(1) if p else m.group(1)] = m.group(2)
    return defs


def code(path):
    """The file's text with comments, strings and characters blanked."""
    text = open(path).read()
    pat = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                     r"'(?:\\.|[^'\\\n])*'", re.S)
    return pat.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def calls(defs, files):
    """(caller file, callee file) -> the callee functions named."""
    edges = {}
    for f in files:
        for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(",
                                   code(os.path.join(SRC, f)))):
            g = defs.get(name)
            if g is not None and g != f:
                edges.setdefault((f, g), set()).add(name)
    return edges


def cycles(edges):
    """The strongly connected parts of more than one file (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    quiet = "--quiet" in sys.argv[1:]
    try:
        names, files = layers()
        defs = functions(files)
    except (OSError, AttributeError, subprocess.CalledProcessError) as e:
        print("layer-calls: cannot look: %s" % e, file=sys.stderr)
        return 2
    edges = calls(defs, files)
    up = []
    for (a, b), fns in sorted(edges.items()):
        la, lb = layer(a, names), layer(b, names)
        if lb > la:
            up.append("%s (%s) -> %s (%s): %s" % (a, names[la - 1], b,
                                                  names[lb - 1],
                                                  ", ".join(sorted(fns))))
    loops = cycles(edges)
    if not quiet:
        for line in up:
            print("up: " + line)
        for part in loops:
            print("cycle of %d: %s" % (len(part), " ".join(part)))
    print("layer-calls: %d calls between files, %d of them up a layer, "
          "%d cycles" % (len(edges), len(up), len(loops)))
    return 1 if up or loops else 0


if __name__ == "__main__":
    sys.exit(main())
