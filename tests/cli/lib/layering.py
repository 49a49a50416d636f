#!/usr/bin/env python3
"""layering.py BUILD_DIR — the layer rule over the object files' symbols:
no file calls a function defined in a higher layer (core < synth < codec <
stream < connectors < demo < app), and no files call each other in a
circle.  Prints what it finds; exit 1 if anything."""
import subprocess, glob, os, collections, sys
objs = glob.glob(sys.argv[1]+'/CMakeFiles/*/processor/**/*.o', recursive=True) + glob.glob(sys.argv[1]+'/CMakeFiles/*/connectors/**/*.o', recursive=True)
root = os.environ.get('DPSTREAM_SOURCE_DIR') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
def source_of(o):
    rel = o.split('.dir/', 1)[1][:-2]   # strip ".o"
    return os.path.join(root, rel)
objs = [o for o in objs if os.path.exists(source_of(o))]   # stale objects of moved files do not count
defs = {}; undefs = {}
for o in objs:
    name = o.split('/processor/')[-1] if '/processor/' in o else 'connectors/' + o.split('/connectors/')[-1]
    name = name.replace('.c.o', '.c')
    out = subprocess.run(['nm', o], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDBR':
            defs[parts[2]] = name
        elif len(parts) == 2 and parts[0] == 'U':
            undefs.setdefault(name, set()).add(parts[1])
edges = collections.defaultdict(set)
for f, us in undefs.items():
    for u in us:
        if u in defs and defs[u] != f:
            edges[f].add(defs[u])
# Tarjan SCC
index = {}; low = {}; st = []; on = set(); sccs = []; i = [0]
sys.setrecursionlimit(10000)
def strong(v):
    index[v] = low[v] = i[0]; i[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(comp)
for v in list(set(defs.values()) | set(undefs)):
    if v not in index: strong(v)
layer = lambda f: f.split('/')[0]
order = ['core', 'synth', 'codec', 'stream', 'connectors', 'demo', 'app']
up = [(f, g) for f in edges for g in edges[f] if layer(f) in order and layer(g) in order and order.index(layer(g)) > order.index(layer(f))]
if not objs:
    sys.exit(f"layering: no object files under {sys.argv[1]}")
print('layering: %d object files; call cycles: %s; upward calls: %s' % (len(objs), sccs or 'none', up or 'none'))
sys.exit(1 if sccs or up else 0)
