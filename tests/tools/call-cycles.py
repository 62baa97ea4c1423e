#!/usr/bin/env python3
# tests/tools/call-cycles.py - which of poold's modules call each other in a
# cycle, read from the objects the build made (nm), not from the sources.
#
#   call-cycles.py ARCHIVE DAEMON_SRCDIR
#
# ARCHIVE is daemon/.libs/libpoold.a; its members from daemon/ are read,
# those of the libraries it takes in (fabric/, common/...) are not. A file
# calls another when it uses a symbol the other defines. A module is a
# folder of DAEMON_SRCDIR (kv/, region/, resp/...; doc/DESIGN.md, section
# 9): its files may call each other, and those calls in a cycle are listed.
# A module also depends on those whose headers its files include (read from
# the sources: a type or a macro is no call). A cycle between modules, of
# calls and includes together, is an error: it names the shortest one and,
# for each step, the calls (files and symbols) or the includes. So is a file
# that includes another module's header but the one named after its folder
# (kv/kv.h), its interface. File names are unique across the folders, as
# the archive's members are named by file alone.
#
# Exit status: 0 no cycle between modules and no include of another's
# private header, 1 one or more, 2 usage or nm failed, or a member whose
# source is in no folder.
import collections
import glob
import os
import re
import subprocess
import sys


def die(message):
    """Usage, nm or the tree is wrong: say so, exit 2."""
    print(message, file=sys.stderr)
    sys.exit(2)


def folders(srcdir):
    """Each source file's module: the folder it is in, by file name (no extension)."""
    module = {}
    for path in glob.glob(os.path.join(srcdir, "*", "*.c")) + glob.glob(os.path.join(srcdir, "*", "*.proto")):
        if path.endswith(".pb-c.c"):
            continue
        name = os.path.splitext(os.path.basename(path))[0]
        if path.endswith(".proto"):
            name += ".pb-c"  # (its generated code, in the build's folder of the same name)
        if name in module:
            die(f"call-cycles: {name} is in {module[name]}/ and {os.path.basename(os.path.dirname(path))}/")
        module[name] = os.path.basename(os.path.dirname(path))
    return module


def nm(archive, *args):
    try:
        out = subprocess.run(["nm", "-A", *args, archive], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        die(f"call-cycles: nm {archive}: {e}")
    # "archive:libpoold_la-kv.o:0000 T kv_open" or "archive:libpoold_la-kv.o:  U region_find"
    for line in out.splitlines():
        m = re.match(r"^[^:]*:libpoold_la-([^:]+)\.o:\s*(?:[0-9a-f]+\s+)?(\S)\s+(\S+)$", line)
        if m:  # (the convenience libraries' members in the archive are not poold's files)
            yield m.group(1), m.group(2), m.group(3)


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iterative."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def includes(srcdir):
    """The files of the folders (generated code aside), and (module, file, header) for each
    include of another module's header, header as "kv/kv.h"."""
    files, out = [], []
    for path in sorted(glob.glob(os.path.join(srcdir, "*", "*.[ch]"))):
        if ".pb-c." in path:
            continue
        own = os.path.basename(os.path.dirname(path))
        files.append(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r'#include "daemon/(([a-z]+)/[a-z.-]+)"', line)
                if m and m.group(2) != own:
                    out.append((own, os.path.basename(path), m.group(1)))
    return files, out


def shortest_cycle(component, edges):
    """The shortest walk from a module of component back to itself, as a list of modules."""
    best = None
    for start in sorted(component):
        prev, todo, last = {start: None}, collections.deque([start]), None
        while todo and last is None:
            v = todo.popleft()
            for w in sorted(edges[v]):
                if w == start:
                    last = v
                    break
                if w in component and w not in prev:
                    prev[w] = v
                    todo.append(w)
        if last is None:
            continue
        path = []
        while last is not None:
            path.append(last)
            last = prev[last]
        loop = path[::-1] + [start]
        if best is None or len(loop) < len(best):
            best = loop
    return best


def main():
    if len(sys.argv) != 3 or not os.path.isfile(sys.argv[1]) or not os.path.isdir(sys.argv[2]):
        die("usage: call-cycles.py daemon/.libs/libpoold.a DAEMON_SRCDIR")
    archive = sys.argv[1]
    module = folders(sys.argv[2])

    def module_of(name):
        if name not in module:
            die(f"call-cycles: {name}.o: no {name}.c in a folder of {sys.argv[2]}")
        return module[name]

    owner = {}
    for f, kind, sym in nm(archive, "--defined-only", "-g"):
        if kind in "TDBRVW":
            owner[sym] = f
    uses = collections.defaultdict(lambda: collections.defaultdict(set))
    files = set(owner.values())
    for f, kind, sym in nm(archive, "-u"):
        files.add(f)
        if sym in owner and owner[sym] != f:
            uses[f][owner[sym]].add(sym)
    medges = collections.defaultdict(set)
    for a in files:
        for b in uses[a]:
            if module_of(a) != module_of(b):
                medges[module_of(a)].add(module_of(b))
    sources, incs = includes(sys.argv[2])
    for a, _, header in incs:
        medges[a].add(header.split("/")[0])
    modules = sorted({module_of(f) for f in files} | {a for a, _, _ in incs})
    # another module's headers are its own but the one named after its folder, its interface
    private = [(a, f, h) for a, f, h in incs if h != f"{h.split('/')[0]}/{h.split('/')[0]}.h"]
    bad = [c for c in sccs(modules, medges) if len(c) > 1]
    fedges = {f: set(uses[f]) for f in files}
    inner = [c for c in sccs(sorted(files), collections.defaultdict(set, fedges)) if len(c) > 1]
    print(f"{len(files)} files, {len(modules)} modules")
    for c in inner:
        if len({module_of(f) for f in c}) == 1:
            print(f"within module {module_of(c[0])}: {' '.join(c)} call each other")
    for c in bad:
        print(f"CYCLE between modules: {' '.join(c)}")
        loop = shortest_cycle(c, medges)
        print(f"  the shortest: {' -> '.join(loop)}")
        for ma, mb in zip(loop, loop[1:]):
            calls = [(a, b) for a in sorted(files) for b in sorted(uses[a])
                     if module_of(a) == ma and module_of(b) == mb]
            for a, b in calls[:3]:
                print(f"  {ma}/{a}.c -> {mb}/{b}.c: {' '.join(sorted(uses[a][b]))}")
            if len(calls) > 3:
                print(f"  ... and {len(calls) - 3} more calls of {ma}/ to {mb}/")
            for a, f, h in incs:
                if not calls and a == ma and h.split("/")[0] == mb:
                    print(f"  {ma}/{f} includes a header of {mb}/")
    for a, f, h in private:
        print(f"FAIL: daemon/{a}/{f} includes daemon/{h}, not daemon/{h.split('/')[0]}/{h.split('/')[0]}.h")
    if not private:
        print(f"poold: each of {len(sources)} files includes only the interface of another module")
    return 1 if bad or private else 0


if __name__ == "__main__":
    sys.exit(main())
