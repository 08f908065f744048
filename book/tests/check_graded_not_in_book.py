#!/usr/bin/env python3
"""Checks that the built book contains none of the graded questions.

Exercises 1 and 6 grade questions from the grader's bank (crates/grader/bank/*.toml), which
no chapter includes; mdbook-quiz embeds every quiz it shows, answers included, in the page.
This script reads every file of the built book (HTML, the search index, copied quiz files)
and fails when any graded question's prompt, any run of RUN words from it, or a graded
option or model answer of RUN words or more appears in one of them.

Text is compared as words: HTML tags and entities, JSON string escapes (how mdbook-quiz
embeds its questions) and Markdown punctuation are removed first, so a prompt is found
whether a chapter printed it, a quiz embedded it, or the search index holds it.

One exception, explicit and limited: the prompts of the article's four Check-yourself
questions (PUBLIC_PROMPTS below), which exercise 6 grades as written answers. The article
prints them, and the Check-yourself page asks them in the same words, so those four prompts
must be found in the built book (the exception fails if one is no longer there or is no
longer in the bank); their model answers, like every other graded text, must not be.

As a check of the matcher itself, the practice quizzes' prompts (which the pages do embed)
must be found by the same search.

Prints `ok ...` / `FAIL ...` lines, then `graded-not-in-book: N passed, M failed`.
Usage: check_graded_not_in_book.py [BOOK_DIR] [BANK_DIR]   (default: book crates/grader/bank)
"""

from __future__ import annotations

import html
import re
import sys
import tomllib
from pathlib import Path

# A run of this many words from a graded text, found in a page, counts as printing it.
RUN = 10
TEXT_SUFFIXES = {".html", ".js", ".json", ".toml", ".txt", ".md", ".css", ".svg"}
# The only graded prompts the book may print (file:id): the article's four questions.
PUBLIC_PROMPTS = {
    "check-yourself.toml:article-double-traffic",
    "check-yourself.toml:article-slower-than-vllm",
    "check-yourself.toml:article-nsight-ttft",
    "check-yourself.toml:article-activations-first",
}


def words(text: str) -> list[str]:
    text = html.unescape(text)
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    text = re.sub(r"\\[nrt]", " ", text)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.findall(r"[0-9a-zµ]+", text.lower())


def runs(ws: list[str]) -> set[tuple[str, ...]]:
    return {tuple(ws[i : i + RUN]) for i in range(max(0, len(ws) - RUN + 1))}


def graded_texts(bank: Path) -> list[tuple[str, str, list[str]]]:
    """(where, what, words) for every graded prompt, option and model answer worth searching."""
    out = []
    for path in sorted(bank.glob("*.toml")):
        for q in tomllib.loads(path.read_text(encoding="utf-8")).get("questions", []):
            where = f"{path.name}:{q.get('id')}"
            out.append((where, "prompt", words(q.get("prompt", {}).get("prompt", ""))))
            answer = q.get("answer", {}).get("answer")
            others = [*(answer if isinstance(answer, list) else [answer]), *q.get("prompt", {}).get("distractors", [])]
            for text in others:
                if isinstance(text, str) and len(words(text)) >= RUN:
                    out.append((where, f"option or answer {text[:40]!r}...", words(text)))
    return out


def practice_prompts(quizzes: Path) -> list[tuple[str, list[str]]]:
    out = []
    for path in sorted(quizzes.glob("*.toml")):
        for q in tomllib.loads(path.read_text(encoding="utf-8")).get("questions", []):
            ws = words(q.get("prompt", {}).get("prompt", ""))
            if len(ws) >= RUN:
                out.append((f"{path.name}:{q.get('id')}", ws))
    return out


def main() -> int:
    book = Path(sys.argv[1] if len(sys.argv) > 1 else "book")
    bank = Path(sys.argv[2] if len(sys.argv) > 2 else "crates/grader/bank")
    built = book / "book"
    passed = failed = 0

    def expect(ok: bool, what: str) -> None:
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")

    pages = {p: words(p.read_text(encoding="utf-8", errors="replace")) for p in sorted(built.rglob("*")) if p.suffix in TEXT_SUFFIXES and p.is_file()}
    expect(any(p.suffix == ".html" for p in pages), f"{built} holds a built book (run mdbook build {book} first)")
    page_runs = {p: runs(ws) for p, ws in pages.items()}
    page_text = {p: " ".join(ws) for p, ws in pages.items()}

    def found_in(ws: list[str]) -> list[str]:
        if len(ws) < RUN:
            needle = " ".join(ws)
            return [str(p.relative_to(built)) for p, text in page_text.items() if needle and f" {needle} " in f" {text} "]
        mine = runs(ws)
        return [str(p.relative_to(built)) for p, rs in page_runs.items() if mine & rs]

    texts = graded_texts(bank)
    expect(len(texts) > 0, f"{bank} holds graded questions")
    public = set()
    for where, what, ws in texts:
        hits = found_in(ws)
        if where in PUBLIC_PROMPTS and what == "prompt":
            public.add(where)
            expect(bool(hits), f"{where} prompt, public (the article's question), is on the Check-yourself page" + ("" if hits else ": found in no built page; ask it there in the same words or drop it from PUBLIC_PROMPTS"))
            continue
        expect(not hits, f"{where} {what} is in no built page" + (f": found in {', '.join(hits[:3])}" if hits else ""))
    expect(public == PUBLIC_PROMPTS, "every public prompt is a question of the bank" + (f" (not in the bank: {sorted(PUBLIC_PROMPTS - public)})" if public != PUBLIC_PROMPTS else ""))

    # The matcher finds what the pages do embed: every practice prompt long enough to search.
    practice = practice_prompts(book / "src" / "quizzes")
    missed = [where for where, ws in practice if not found_in(ws)]
    expect(bool(practice) and not missed, f"the same search finds the {len(practice)} practice prompts the pages embed" + (f" (missed {missed[:3]})" if missed else ""))

    print(f"graded-not-in-book: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
