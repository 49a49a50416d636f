#!/usr/bin/env python3
"""doc_citations.py SOURCE_DIR — every document the repository cites is in
the repository, and every section it cites is there.

A citation is `<path>.md §N` (also `§N-§M`, `§N, §M`, the `§` on the next
line of a comment, and `<path>.md section N` where the text must be ASCII).
<path> resolves against the repository root, or against the citing file's
directory; §N must be a `## §N <title>` heading
of that file.  Any mention of DESIGN.md, ALGORITHMS.md, KAFKA.md or
PEERS.md (documents that once lived outside the tree: their contents are
docs/design.md, docs/privacy.md, docs/kafka.md, docs/peers.md) fails,
section or not.  Prints each failing citation as file:line; exit 1 if any."""
import os, re, sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
SCAN_DIRS = ['processor', 'connectors', 'tests', 'scripts', 'bench', 'docker', 'docs', 'schemas']
SCAN_FILES = ['README.md', 'CMakeLists.txt']
TEXT_EXT = {'.c', '.h', '.sh', '.py', '.md', '.txt', '.json', '.avsc', '.yml', '.yaml', '.cmake',
            '.js', '.html', '.css', '.R', '.r', '.java', '.toml', '.cfg', ''}
OLD = re.compile(r'(?<![\w/.-])(DESIGN|ALGORITHMS|KAFKA|PEERS)\.md\b')
# a path ending in .md, then optionally (across one comment line break) a § list
CITE = re.compile(r'(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)'
                  r'((?:[ \t]*\n[ \t]*(?:\*|#|//|--)?)?[ \t]*(?:§|section )[ \t]*\d+'
                  r'(?:[ \t]*(?:,|-|–|and|to)[ \t]*§[ \t]*\d+)*)')
HEADING = re.compile(r'^## §(\d+) \S', re.M)

def files():
    for d in SCAN_DIRS:
        for dp, dns, fns in os.walk(os.path.join(root, d)):
            dns[:] = [x for x in dns if not x.startswith('.') and x not in ('__pycache__', 'node_modules')]
            for f in fns:
                if os.path.splitext(f)[1] in TEXT_EXT:
                    yield os.path.join(dp, f)
    for f in SCAN_FILES:
        p = os.path.join(root, f)
        if os.path.exists(p):
            yield p

sections_of = {}
def sections(path):
    if path not in sections_of:
        with open(path, encoding='utf-8', errors='replace') as fh:
            sections_of[path] = {int(n) for n in HEADING.findall(fh.read())}
    return sections_of[path]

def numbers(spec):
    """'§1-§3' -> 1, 2, 3; '§6, §8' -> 6, 8."""
    out = []
    parts = re.findall(r'(,|-|–|and|to)?[ \t\n*#/]*(?:§|section )[ \t]*(\d+)', spec)
    for sep, n in parts:
        n = int(n)
        if sep in ('-', '–', 'to') and out:
            out.extend(range(out[-1] + 1, n + 1))
        else:
            out.append(n)
    return out

SELF = {'tests/cli/doc_citations.sh', 'tests/cli/lib/doc_citations.py'}   # they name the old files
bad = []
n_cites = 0
for path in sorted(set(files())):
    rel = os.path.relpath(path, root)
    if rel in SELF:
        continue
    try:
        with open(path, encoding='utf-8') as fh:
            text = fh.read()
    except (UnicodeDecodeError, OSError):
        continue
    line_of = lambda pos: text.count('\n', 0, pos) + 1
    for m in OLD.finditer(text):
        bad.append(f'{rel}:{line_of(m.start())}: {m.group(0)} is not in the repository '
                   f'(its contents are docs/{ {"DESIGN": "design", "ALGORITHMS": "privacy", "KAFKA": "kafka", "PEERS": "peers"}[m.group(1)]}.md)')
    for m in CITE.finditer(text):
        doc, spec = m.group(1), m.group(2)
        if OLD.fullmatch(os.path.basename(doc)) and '/' not in doc:
            continue                      # already reported above
        n_cites += 1
        where = f'{rel}:{line_of(m.start())}'
        cite = doc + ' ' + ' '.join(re.sub(r'\n[ \t]*(?:\*|#|//|--)?', ' ', spec).split())
        target = None
        for cand in (os.path.join(root, doc), os.path.join(os.path.dirname(path), doc)):
            if os.path.isfile(cand):
                target = cand
                break
        if target is None:
            bad.append(f'{where}: {cite}: no file {doc} in the repository')
            continue
        have = sections(target)
        for n in numbers(spec):
            if n not in have:
                bad.append(f'{where}: {cite}: {os.path.relpath(target, root)} has no "## §{n} …" heading')

for b in bad:
    print(b)
print(f'{n_cites} section citations checked; {len(bad)} problems', file=sys.stderr)
sys.exit(1 if bad else 0)
