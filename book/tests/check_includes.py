#!/usr/bin/env python3
"""Checks that every {{#include}} in the book's chapters pulls real code.

`mdbook build` only logs an error for an include whose file is missing and still exits 0, and an
anchor that does not exist includes nothing at all. Both would let a chapter silently show an
empty or unexpanded code block, so this script checks, for every `{{#include PATH[:ANCHOR]}}`
(and `{{#rustdoc_include ...}}`) in book/src/**/*.md:

  * PATH exists, relative to the chapter;
  * when ANCHOR is a name (not a line range), PATH has both `ANCHOR: name` and
    `ANCHOR_END: name` markers, with at least one line between them;

and, when given the built book, that no `{{#` directive is left unexpanded in the HTML.

Usage: check_includes.py [BOOK_DIR]   (default: book). Exit code 0 when all is well.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

INCLUDE = re.compile(r"\{\{#(?:include|rustdoc_include)\s+([^}\s]+)\s*\}\}")
LINE_RANGE = re.compile(r"^\d*(:\d*)?$")


def anchored_lines(text: str, anchor: str) -> int | None:
    """Lines between `ANCHOR: anchor` and `ANCHOR_END: anchor`, or None if a marker is missing."""
    start = re.search(rf"ANCHOR:\s*{re.escape(anchor)}\b", text)
    end = re.search(rf"ANCHOR_END:\s*{re.escape(anchor)}\b", text)
    if not start or not end or end.start() < start.end():
        return None
    return text[start.end() : end.start()].count("\n") - 1


def check_sources(src: Path) -> tuple[int, list[str]]:
    problems: list[str] = []
    count = 0
    for chapter in sorted(src.rglob("*.md")):
        for lineno, line in enumerate(chapter.read_text(encoding="utf-8").splitlines(), start=1):
            for spec in INCLUDE.findall(line):
                count += 1
                path_part, _, anchor = spec.partition(":")
                where = f"{chapter}:{lineno}"
                target = chapter.parent / path_part
                if not target.is_file():
                    problems.append(f"{where}: includes {path_part}, which does not exist")
                    continue
                if anchor and not LINE_RANGE.match(anchor):
                    lines = anchored_lines(target.read_text(encoding="utf-8"), anchor)
                    if lines is None:
                        problems.append(
                            f"{where}: anchor '{anchor}' not found in {path_part} "
                            f"(it needs '// ANCHOR: {anchor}' and '// ANCHOR_END: {anchor}' comments)"
                        )
                    elif lines < 1:
                        problems.append(f"{where}: anchor '{anchor}' in {path_part} holds no lines")
    return count, problems


def check_built(built: Path) -> list[str]:
    problems = []
    for page in sorted(built.rglob("*.html")):
        for lineno, line in enumerate(page.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if "{{#" in line:
                problems.append(f"{page.relative_to(built)}:{lineno}: unexpanded directive: {line.strip()[:80]}")
    return problems


def main() -> int:
    book = Path(sys.argv[1] if len(sys.argv) > 1 else "book")
    count, problems = check_sources(book / "src")
    built = book / "book"
    if built.is_dir():
        problems += check_built(built)
    for problem in problems:
        print(f"check_includes: {problem}", file=sys.stderr)
    print(f"check_includes: {count} includes checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
