#!/usr/bin/env python3
"""Turns the C++ snippets of a Markdown page into one program that runs them all.

Every ```cpp block of the page is copied, in order, into one translation unit (the first block
holds the includes the others assume). Every function `void example_NAME()` the blocks define
is then called by a generated main(), in the order it appears; an exception ends the program
with status 1 and the snippet's name. So a page's examples cannot drift from the library: the
test suite compiles and runs them.

With --program, the page's first ```cpp block is a whole program instead, and is copied as it
is (after a #line directive, so compiler errors point into the page).

Usage: extract_snippets.py [--program] PAGE.md OUT.cpp
"""
import re
import sys


def main():
    args = sys.argv[1:]
    program = args[:1] == ["--program"]
    if program:
        args = args[1:]
    if len(args) != 2:
        sys.exit("usage: extract_snippets.py [--program] PAGE.md OUT.cpp")
    page, out = args
    blocks, current, line_of = [], None, 0
    with open(page, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if current is None and line.strip() == "```cpp":
                current, line_of = [], n + 1
            elif current is not None and line.strip() == "```":
                blocks.append((line_of, "".join(current)))
                current = None
            elif current is not None:
                current.append(line)
    if current is not None:
        sys.exit(f"{page}: a ```cpp block is not closed")
    if not blocks:
        sys.exit(f"{page}: no ```cpp blocks")
    if program:
        line_of, text = blocks[0]
        write_if_changed(out, f'#line {line_of} "{page}"\n{text}')
        return
    examples = []
    parts = [f"// Generated from {page} by tests/docs/extract_snippets.py; do not edit.\n"]
    for line_of, text in blocks:
        parts.append(f'#line {line_of} "{page}"\n{text}')
        examples += re.findall(r"^void (example_\w+)\(\)", text, re.M)
    if not examples:
        sys.exit(f"{page}: no example_* functions")
    parts.append("\n#line 1 \"generated main\"\nint main() {\n")
    for e in examples:
        parts.append(f'  try {{ {e}(); }} catch (const std::exception& x) {{\n'
                     f'    std::fprintf(stderr, "{e}: %s\\n", x.what());\n    return 1;\n  }}\n')
        parts.append(f'  std::fprintf(stderr, "{e}: ok\\n");\n')
    parts.append("  return 0;\n}\n")
    write_if_changed(out, "".join(parts))


def write_if_changed(out, text):
    """Leaves an unchanged output alone, so that the build does not recompile it."""
    try:
        with open(out, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
