#!/usr/bin/env python3
"""Copies the first ```cpp block of a Markdown page, a whole program, into a source file (with a
#line directive, so compiler errors point into the page). Usage: extract_program.py PAGE OUT"""
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: extract_program.py PAGE.md OUT.cpp")
    page, out = sys.argv[1], sys.argv[2]
    block, first_line = None, 0
    with open(page, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if block is None and line.strip() == "```cpp":
                block, first_line = [], n + 1
            elif block is not None and line.strip() == "```":
                break
            elif block is not None:
                block.append(line)
        else:
            sys.exit(f"{page}: no closed ```cpp block")
    text = f'#line {first_line} "{page}"\n' + "".join(block)
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
