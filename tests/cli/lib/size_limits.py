#!/usr/bin/env python3
"""size_limits.py ROOT — the house size rules over processor/ and
connectors/: no .c or .h file over 800 lines, no C function over 150.

A function is a brace block at file level whose `{` follows a `)` (after
comments, string and character literals and preprocessor lines are blanked
out, newlines kept); its length runs from the first line of its declaration
(the first non-blank line after the previous file-level `;`, `}` or
preprocessor line) to its closing `}`, both included — the lines a reader
scrolls through.  Prints every breach; exit 1 if any.  No exceptions are
listed anywhere: a file that breaks a rule is split at its seams."""
import os
import re
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150
DIRS = ('processor', 'connectors')
PREPROCESSOR = re.compile(r'[ \t]*#')


def blank(text):
    """Comments, literals and preprocessor lines as spaces; newlines kept."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and PREPROCESSOR.match(text, i):
            # a preprocessor line, with its backslash continuations
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append(' \n')
                    i += 2
                    continue
                out.append(' ')
                i += 1
            continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
            line_start = False
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
            continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c)
            i = j
            line_start = False
            continue
        out.append(c)
        line_start = c == '\n' or (line_start and c in ' \t')
        i += 1
    return ''.join(out)


def functions(text):
    """(name, first line, last line) of every function defined in text."""
    code = blank(text)
    found = []
    depth = 0
    decl_start = None   # offset of the first non-blank char after the last file-level terminator
    body = None         # (name, start offset) while inside a function body
    for i, c in enumerate(code):
        if depth == 0 and decl_start is None and not c.isspace() and c not in ';}':
            decl_start = i
        if c == '{':
            if depth == 0:
                before = code[:i].rstrip()
                if before.endswith(')'):
                    # the identifier before the parenthesis that `)` closes
                    k, level = len(before) - 1, 0
                    while k >= 0:
                        if before[k] == ')':
                            level += 1
                        elif before[k] == '(':
                            level -= 1
                            if level == 0:
                                break
                        k -= 1
                    m = re.search(r'([A-Za-z_]\w*)\s*$', before[:max(k, 0)])
                    body = (m.group(1) if m else '?', decl_start if decl_start is not None else i)
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                if body:
                    first = code.count('\n', 0, body[1]) + 1
                    last = code.count('\n', 0, i) + 1
                    found.append((body[0], first, last))
                    body = None
                decl_start = None
        elif c == ';' and depth == 0:
            decl_start = None
    return found


def main(root):
    bad = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    text = fh.read()
                lines = text.count('\n') + (0 if text.endswith('\n') or not text else 1)
                if lines > MAX_FILE_LINES:
                    bad.append(f'{rel}: {lines} lines (limit {MAX_FILE_LINES})')
                for name, first, last in functions(text):
                    if last - first + 1 > MAX_FUNCTION_LINES:
                        bad.append(f'{rel}:{first}: function {name} is {last - first + 1} lines '
                                   f'(limit {MAX_FUNCTION_LINES})')
    for b in sorted(bad):
        print(b)
    return 1 if bad else 0


if __name__ == '__main__':
    if len(sys.argv) > 2 and sys.argv[1] == '--functions':
        # a listing for checking the scanner by eye: name first last length
        for path in sys.argv[2:]:
            with open(path, encoding='utf-8', errors='replace') as fh:
                for name, first, last in functions(fh.read()):
                    print(f'{path}:{first}-{last} {last - first + 1} {name}')
        sys.exit(0)
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
