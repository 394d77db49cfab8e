#!/usr/bin/env python3
"""Lists C/C++ functions (and lambdas) whose bodies are longer than a limit.

    tools/dev/long_functions.py [--limit 80] [--allow FILE] [paths...]

A heuristic scanner, not a parser: it strips comments and string literals, then treats a
'{' whose preceding code ends a parameter list (')' optionally followed by qualifiers such as
const, noexcept, override, a trailing return type or a constructor's initialiser list) as the
start of a function body. Bodies nested in a longer one are reported on their own too.
A function whose reason to be long is written next to it, as a comment containing
"long-function:" on one of the five lines above its body's opening line, is accepted (an
interpreter's dispatch switch is such a reason). With --check the exit status is 1 if any
other function is over the limit.
"""
import argparse, re, subprocess, sys

def strip(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c == 'R' and src.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', src[i:])
            end = src.find(')' + (m.group(1) if m else '') + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else '') + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c in '"\'':
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + ' ' * (j - i - 2) + c if j - i >= 2 else src[i:j]); i = j
        else:
            out.append(c); i += 1
    return ''.join(out)

SIG = re.compile(r'\)\s*(const|noexcept|override|final|mutable|->\s*[\w:<>,\s*&]+|\s)*$')
INIT = re.compile(r'\)\s*:\s*[\w:]+\s*[({].*[)}]\s*$', re.S)
NAME = re.compile(r'([~\w:]+|operator\s*\S+)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*(const|noexcept|override|final|mutable|->[^{]*|\s)*$', re.S)

def functions(path):
    src = strip(open(path, encoding='utf-8', errors='replace').read())
    stack = []  # (kind, start line, name)
    line = 1
    for i, c in enumerate(src):
        if c == '\n':
            line += 1
        elif c == '{':
            before = src[max(0, i - 600):i]
            head = before[before.rfind(';') + 1:] if ';' in before else before
            head = head[head.rfind('}') + 1:] if '}' in head else head
            kind, name = 'block', ''
            h = head.strip()
            if SIG.search(h) or INIT.search(h):
                kw = re.search(r'\b(if|for|while|switch|catch)\s*\(', h)
                m = NAME.search(h) if not INIT.search(h) else re.search(r'([~\w:]+)\s*\(', h)
                if m and not kw:
                    kind, name = 'function', m.group(1)
                elif re.search(r'\]\s*(\([^)]*\))?\s*(mutable|->[^{]*)?\s*$', h) or h.endswith(')') and ']' in h:
                    kind, name = 'lambda', 'lambda'
            elif re.search(r'\]\s*(mutable\s*)?$', h):
                kind, name = 'lambda', 'lambda'
            stack.append((kind, line, name))
        elif c == '}' and stack:
            kind, start, name = stack.pop()
            if kind != 'block':
                yield name, start, line, line - start - 1

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--limit', type=int, default=80)
    ap.add_argument('--check', action='store_true')
    ap.add_argument('paths', nargs='*')
    a = ap.parse_args()
    files = a.paths or subprocess.run(['git', 'ls-files', '*.cpp', '*.hpp', '*.c', '*.h'],
                                      capture_output=True, text=True, check=True).stdout.split()
    bad = 0
    for f in files:
        lines = open(f, encoding='utf-8', errors='replace').read().split('\n')
        for name, start, end, n in functions(f):
            if n > a.limit:
                ok = any('long-function:' in l for l in lines[max(0, start - 6):start])
                bad += not ok
                print(f'{"accepted " if ok else ""}{f}:{start}: {name} ({n} lines)')
    if a.check and bad:
        print(f'{bad} functions over {a.limit} lines without a "long-function:" reason',
              file=sys.stderr)
    return 1 if (a.check and bad) else 0

sys.exit(main())
