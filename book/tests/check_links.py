#!/usr/bin/env python3
"""Checks every relative link and anchor in the built book (book/book by default).

mdBook's own link checker is not part of mdBook 0.5, so this walks the HTML that `mdbook build`
wrote: for every <a href>, <link href>, <script src> and <img src> that points inside the book,
the target file must exist, and a `#fragment` must name an element id (or <a name>) in it.
External links (with a scheme, or starting with //) are not fetched: the tests run offline.

Usage: check_links.py [BUILT_BOOK_DIR]    exit code 0 when every link resolves, 1 otherwise.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Pages mdBook generates with links that only work from the site root (404.html uses a
# <base href> to the site URL), so their relative links cannot be resolved from the file.
SKIPPED_PAGES = {"404.html"}

LINK_ATTRIBUTES = {"a": "href", "link": "href", "script": "src", "img": "src"}


class PageScanner(HTMLParser):
    """Collects the links and the anchor targets (ids and <a name>) of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[int, str]] = []
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.anchors.add(values["id"])
        if tag == "a" and values.get("name"):
            self.anchors.add(values["name"])
        wanted = LINK_ATTRIBUTES.get(tag)
        if wanted and values.get(wanted):
            self.links.append((self.getpos()[0], values[wanted]))


def scan(page: Path, cache: dict[Path, PageScanner]) -> PageScanner:
    if page not in cache:
        scanner = PageScanner()
        scanner.feed(page.read_text(encoding="utf-8", errors="replace"))
        cache[page] = scanner
    return cache[page]


def is_external(link: str) -> bool:
    parts = urlsplit(link)
    return bool(parts.scheme) or link.startswith("//")


def check_book(root: Path) -> list[str]:
    problems: list[str] = []
    cache: dict[Path, PageScanner] = {}
    pages = sorted(p for p in root.rglob("*.html") if p.name not in SKIPPED_PAGES)
    checked = 0
    for page in pages:
        for line, link in scan(page, cache).links:
            if is_external(link) or link.startswith("javascript:"):
                continue
            parts = urlsplit(link)
            if parts.path:
                target = (page.parent / unquote(parts.path)).resolve()
                if target.is_dir():
                    target = target / "index.html"
            else:
                target = page
            where = f"{page.relative_to(root)}:{line}"
            checked += 1
            if not target.exists():
                problems.append(f"{where}: link '{link}' points to a missing file")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html":
                if fragment not in scan(target, cache).anchors:
                    problems.append(
                        f"{where}: link '{link}' names anchor '#{fragment}', "
                        f"which {target.relative_to(root)} does not define"
                    )
    print(f"check_links: {checked} internal links in {len(pages)} pages checked")
    return problems


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "book/book").resolve()
    if not (root / "index.html").exists():
        print(
            f"check_links: no built book at {root} (index.html missing). "
            "Run `mdbook build book` first.",
            file=sys.stderr,
        )
        return 1
    problems = check_book(root)
    for problem in problems:
        print(f"check_links: BROKEN {problem}", file=sys.stderr)
    if problems:
        print(
            f"check_links: {len(problems)} broken link(s). Fix the Markdown under book/src "
            "(the HTML file names the chapter; .md links become .html).",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
