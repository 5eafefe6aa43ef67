#!/usr/bin/env python3
"""No function in src/ is over 120 lines (house style, HACKING.md).

A function is counted from the line holding its opening brace at column 0
to the line holding its closing brace at column 0, both included.  Prints
TAP: one test for the tree, and two that prove on generated fixtures that
the count catches 121 lines and passes 120.
"""
import os
import re
import sys

LIMIT = 120


def long_functions(name, text):
    """(name, line, length) of each function in TEXT over LIMIT lines."""
    lines = text.split('\n')
    found, start, fname = [], None, None
    for i, line in enumerate(lines):
        if line == '{' and i > 0:
            start, fname = i, '?'
            for j in range(i - 1, max(i - 8, -1), -1):
                m = re.search(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(', lines[j])
                if m and not lines[j].startswith((' ', '\t')):
                    fname = m.group(1)
                    break
        elif line.startswith('}') and start is not None:
            n = i - start + 1
            if n > LIMIT:
                found.append((f'{name}:{start + 1}', fname, n))
            start = None
    return found


def fixture(body_lines):
    return 'static int f(void)\n{\n' + '\tx();\n' * body_lines + '}\n'


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    bad = []
    for d, _, files in os.walk(os.path.join(root, 'src')):
        for f in sorted(files):
            if f.endswith('.c'):
                p = os.path.join(d, f)
                with open(p, encoding='utf-8', errors='replace') as fh:
                    bad += long_functions(os.path.relpath(p, root), fh.read())
    print('1..3')
    if bad:
        print('not ok 1 - every function in src/ is at most %d lines' % LIMIT)
        for where, fname, n in bad:
            print('# %s: %s is %d lines' % (where, fname, n))
    else:
        print('ok 1 - every function in src/ is at most %d lines' % LIMIT)
    caught = long_functions('fixture', fixture(LIMIT - 1))   # 121 lines with its braces
    print('%s 2 - a function of %d lines is caught' % ('ok' if caught else 'not ok', LIMIT + 1))
    passed = not long_functions('fixture', fixture(LIMIT - 2))
    print('%s 3 - a function of %d lines passes' % ('ok' if passed else 'not ok', LIMIT))
    return 0


if __name__ == '__main__':
    sys.exit(main())
