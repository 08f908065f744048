#!/usr/bin/env python3
"""Counts the book's prose words and holds the core path and each exercise page to a limit.

    python3 scripts/count-words.py [BOOK_SRC]      # default book/src; exits 1 when over a limit
    python3 scripts/count-words.py --report        # the same table, never fails (before/after)
    python3 scripts/count-words.py --self-test     # the counting rules on built-in cases

Two limits:
  - the core ideas path, 4,500 words: the introduction (every chapter SUMMARY.md lists before
    its first part) and the chapters listed under "# The ideas" in SUMMARY.md, each counted up
    to its "Going deeper" heading (any level), or whole if it has none;
  - each exercise page, exercises/exercise-N.md, 1,200 words, whole.

What counts as a word: a run of characters between spaces that holds a letter or a digit, in
prose. Not prose, so not counted:
  - fenced code blocks (``` or ~~~) and table rows (lines starting with '|');
  - HTML comments, HTML tags (their text between tags is counted), images, link destinations
    (a link's text is counted), list markers and heading marks;
  - {{#quiz}} (quizzes are practice, not prose) and {{#include}} of anything but a Markdown page
    (code, generated tables and pictures); an {{#include}} of a .md file (book/src/includes) is
    counted where it is included, as the reader reads it there.
  - the other {{#...}} directives' markup: {{#measured KEY}} counts as one word (it renders as
    one figure), {{#given TEXT}} as TEXT's words, and {{#claim NAME}}...{{#endclaim}} as the
    sentence between its markers.
Inline code (`cargo run -p exercise-3`) is part of a sentence and is counted.

Ends with "N over the limit, M within"; --self-test ends with "N passed, M failed".
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

CORE_LIMIT = 4500
EXERCISE_LIMIT = 1200
IDEAS_PART = "The ideas"
GOING_DEEPER = re.compile(r"^\s{0,3}#{1,6}\s+Going deeper\b", re.I | re.M)


def included_markdown(spec, page):
    """The text of an {{#include PATH[:ANCHOR|:FROM[:TO]]}} of a .md file, or None."""
    path, _, selector = spec.partition(":")
    if not path.endswith(".md"):
        return None
    target = (page.parent / path).resolve()
    try:
        text = target.read_text(encoding="utf-8")
    except OSError:
        return None
    if not selector:
        return text
    lines = text.split("\n")
    if re.fullmatch(r"\d*(:\d*)?", selector):
        start, _, end = selector.partition(":")
        lo = int(start) - 1 if start else 0
        hi = int(end) if end else (len(lines) if ":" in selector or not start else lo + 1)
        return "\n".join(lines[lo:hi])
    inside, kept = False, []
    for line in lines:
        if re.search(r"ANCHOR:\s*" + re.escape(selector) + r"\b", line):
            inside = True
        elif re.search(r"ANCHOR_END:\s*" + re.escape(selector) + r"\b", line):
            inside = False
        elif inside and "ANCHOR" not in line:
            kept.append(line)
    return "\n".join(kept)


def expand_includes(text, page, depth=0):
    """Replaces {{#include X.md}} by X's text (nested up to 5 deep); other includes stay."""
    if depth > 5:
        return text

    def one(m):
        inner = included_markdown(m.group(1).strip(), page)
        if inner is None:
            return m.group(0)
        return expand_includes(inner, page, depth + 1)

    return re.sub(r"\{\{#include\s+([^}]*?)\s*\}\}", one, text)


def prose_text(text):
    """The words a reader reads as prose, as one string (line structure dropped)."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    out, fence = [], None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence is None:
            m = re.match(r"(`{3,}|~{3,})", stripped)
            if m:
                fence = (m.group(1)[0], len(m.group(1)))
                continue
            if stripped.startswith("|"):
                continue  # a table row
            out.append(line)
        else:
            m = re.match(r"(`{3,}|~{3,})\s*$", stripped)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1]:
                fence = None
    text = "\n".join(out)
    text = re.sub(r"\{\{#measured\s+[^}]*\}\}", " FIGURE ", text)
    text = re.sub(r"\{\{#given\s+(.*?)\}\}", r" \1 ", text, flags=re.S)
    text = re.sub(r"\{\{#[^}]*\}\}", " ", text)  # quiz, claim markers, includes left unexpanded
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)  # images
    text = re.sub(r"\]\([^)]*\)", "] ", text)  # link destinations
    text = re.sub(r"<[^<>\n]+>", " ", text)  # HTML tags and autolinks
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", " ", text, flags=re.M)  # list markers
    return text


def count_words(text):
    return sum(1 for token in prose_text(text).split() if re.search(r"\w", token))


def core_text(text):
    """A chapter up to its Going deeper heading, and whether it was cut there."""
    m = GOING_DEEPER.search(text)
    return (text[: m.start()], True) if m else (text, False)


def core_chapters(src):
    """The introduction (chapters before the first part) and the chapters under "# The ideas"."""
    summary = src / "SUMMARY.md"
    chapters, part = [], None
    for line in summary.read_text(encoding="utf-8").split("\n"):
        heading = re.match(r"^#\s+(.*?)\s*$", line)
        if heading:
            part = heading.group(1)
            continue
        link = re.search(r"\]\(([^)#\s]+\.md)\)", line)
        if link and (part is None or part == "Summary" or part == IDEAS_PART):
            chapters.append(src / link.group(1))
    if not chapters:
        raise ValueError(f"{summary}: no chapter under '# {IDEAS_PART}' (check its part headings)")
    return chapters


def exercise_pages(src):
    def number(p):
        return int(re.search(r"(\d+)", p.stem).group(1))

    return sorted((src / "exercises").glob("exercise-*.md"), key=number)


def words_of(page, core):
    text = page.read_text(encoding="utf-8")
    cut = False
    if core:
        text, cut = core_text(text)
    return count_words(expand_includes(text, page)), cut


def run(src, report, out=sys.stdout):
    """Prints the table; returns the names of what is over its limit."""
    src = Path(src)
    rows, over = [], []
    core_total = 0
    for page in core_chapters(src):
        if not page.is_file():
            print(f"FAIL {page}: listed in {src / 'SUMMARY.md'} but missing", file=out)
            over.append(str(page))
            continue
        n, cut = words_of(page, core=True)
        core_total += n
        rows.append((f"{page}" + (" (to Going deeper)" if cut else ""), n, ""))
    rows.append((f"core ideas path ({len(rows)} chapters)", core_total, CORE_LIMIT))
    if core_total > CORE_LIMIT:
        over.append("core ideas path")
    exercise_rows = []
    for page in exercise_pages(src):
        n, _ = words_of(page, core=False)
        exercise_rows.append((str(page), n, EXERCISE_LIMIT))
        if n > EXERCISE_LIMIT:
            over.append(str(page))
    rows.extend(exercise_rows)

    every = sorted(src.rglob("*.md"))
    whole = sum(count_words(expand_includes(p.read_text(encoding="utf-8"), p))
                for p in every if p.name != "SUMMARY.md" and "includes" not in p.parts)

    width = max(len(r[0]) for r in rows)
    print(f"{'file':<{width}}  {'words':>6}  {'limit':>6}", file=out)
    for name, n, limit in rows:
        print(f"{name:<{width}}  {n:>6,}  {limit:>6,}" if limit else f"{name:<{width}}  {n:>6,}", file=out)
    print(f"(every page of the book, whole: {whole:,} words in {len(every)} files)", file=out)

    if core_total > CORE_LIMIT:
        print(f"{'FAIL' if not report else 'over'} core ideas path: {core_total:,} words, "
              f"{core_total - CORE_LIMIT:,} over the limit of {CORE_LIMIT:,}; shorten the chapters "
              f"listed above, or move what backs them up under a '## Going deeper' heading", file=out)
    for name, n, limit in exercise_rows:
        if n > limit:
            print(f"{'FAIL' if not report else 'over'} {name}: {n:,} words, {n - limit:,} over the "
                  f"limit of {limit:,}; shorten the page (the exercise's README can hold reference "
                  f"detail)", file=out)
    over_limit = [o for o in over if o == "core ideas path" or o in {r[0] for r in exercise_rows}]
    within = 1 + len(exercise_rows) - len(over_limit)
    print(f"{len(over_limit)} over the limit, {within} within", file=out)
    return over


# --- self-test ----------------------------------------------------------------------------------

COUNT_CASES = [
    ("Benchmarking tells you how; profiling tells you why.", 8),
    ("# A heading\n\n- one item\n- two items\n1. three", 7),
    ("Run `cargo run -p exercise-3` now.", 6),
    ("text\n\n```console\nthese five words are code\n```\nmore", 2),
    ("text\n~~~\nnot counted\n~~~\n", 1),
    ("before\n| a | b |\n|---|---|\n| c d e | f |\nafter", 2),
    ("one <!-- not these\nwords --> two", 2),
    ("gelu takes {{#measured exercise-3.gelu.share}} of the step", 6),
    ("the {{#given 6 ms}} line", 4),
    ("{{#claim fusion-cpu}}Fusion moves nothing here.{{#endclaim}}", 4),
    ("{{#quiz quizzes/how-versus-why.toml}}", 0),
    ("{{#include ../images/exercise-3-table.txt}}", 0),
    ("see [the budget chapter](profile-as-budget.md#reading) here", 5),
    ("![a picture of a flame graph](images/flamegraph.svg)", 0),
    ('<figure><img src="a.svg" alt="x y z"><figcaption>Two words</figcaption></figure>', 2),
    ("a dash — and ** markup ** alone", 5),
]


def run_self_test():
    passed = failed = 0

    def result(ok, label, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"ok   {label}")
        else:
            failed += 1
            print(f"FAIL {label}{detail}")

    for text, expected in COUNT_CASES:
        got = count_words(text)
        result(got == expected, f"{text!r} counts {expected}", f": got {got}")

    text, cut = core_text("one two\n\n## Going deeper\n\nthree four five\n")
    result(cut and count_words(text) == 2, "a chapter counts up to Going deeper",
           f": got {count_words(text)} (cut {cut})")
    text, cut = core_text("one two three\n")
    result(not cut and count_words(text) == 3, "a chapter without Going deeper counts whole")

    with tempfile.TemporaryDirectory() as d:
        src = Path(d)
        (src / "exercises").mkdir()
        (src / "includes").mkdir()
        (src / "SUMMARY.md").write_text(
            "# Summary\n\n[Introduction](introduction.md)\n\n# The ideas\n\n"
            "- [One](one.md)\n- [Two](two.md)\n\n# The exercises\n\n"
            "- [Overview](exercises/overview.md)\n  - [E1](exercises/exercise-1.md)\n"
            "  - [E10](exercises/exercise-10.md)\n",
            encoding="utf-8",
        )
        (src / "introduction.md").write_text("intro words here\n", encoding="utf-8")
        (src / "includes" / "shared.md").write_text("| t | t |\n|---|---|\nfour shared words here\n",
                                                    encoding="utf-8")
        (src / "one.md").write_text("alpha beta\n{{#include includes/shared.md}}\n"
                                    "## Going deeper\nnot counted at all\n", encoding="utf-8")
        (src / "two.md").write_text("gamma\n{{#quiz quizzes/two.toml}}\n", encoding="utf-8")
        (src / "exercises" / "overview.md").write_text("the overview is not limited\n",
                                                       encoding="utf-8")
        (src / "exercises" / "exercise-1.md").write_text("word " * 1200, encoding="utf-8")
        (src / "exercises" / "exercise-10.md").write_text("word " * 1201, encoding="utf-8")

        chapters = [p.name for p in core_chapters(src)]
        result(chapters == ["introduction.md", "one.md", "two.md"],
               "the core path is the introduction and the ideas part", f": got {chapters}")
        import io

        buf = io.StringIO()
        over = run(src, report=False, out=buf)
        lines = buf.getvalue().splitlines()
        core_line = next((l for l in lines if l.startswith("core ideas path")), "")
        result(core_line.split()[-2:] == ["10", "4,500"],
               "the core total adds chapters to Going deeper and included pages (3 + 6 + 1)",
               f": got {core_line!r}")
        result(over == [str(src / "exercises" / "exercise-10.md")],
               "an exercise page over 1,200 words is named; one at 1,200 is within",
               f": got {over}")
        result(any(l.startswith(f"FAIL {src / 'exercises' / 'exercise-10.md'}: 1,201 words")
                   for l in lines), "the failure names the file and its count", f": got {lines}")
        result(lines[-1] == "1 over the limit, 2 within", "the last line counts the limits",
               f": got {lines[-1]!r}")
        buf = io.StringIO()
        run(src, report=True, out=buf)
        result(not any(l.startswith("FAIL") for l in buf.getvalue().splitlines()),
               "--report names what is over without FAIL")

    print(f"{passed} passed, {failed} failed")
    return failed == 0


def main():
    parser = argparse.ArgumentParser(
        description=f"Counts the book's prose words: the core ideas path (limit {CORE_LIMIT:,}) and "
        f"each exercise page (limit {EXERCISE_LIMIT:,}). The rules are in this script's docstring.")
    parser.add_argument("src", nargs="?", help="the book's src folder (default: book/src)")
    parser.add_argument("--report", action="store_true",
                        help="print the counts and never fail (for before/after figures)")
    parser.add_argument("--self-test", action="store_true", help="check the counting rules")
    args = parser.parse_args()
    if args.self_test:
        return 0 if run_self_test() else 1
    src = Path(args.src) if args.src else Path(__file__).resolve().parent.parent / "book" / "src"
    if src.resolve().is_relative_to(Path.cwd()):
        src = src.resolve().relative_to(Path.cwd())
    if not (src / "SUMMARY.md").is_file():
        print(f"FAIL {src}: no SUMMARY.md here; give the book's src folder (book/src)")
        return 2
    try:
        over = run(src, args.report)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"FAIL {e}")
        return 2
    return 1 if over and not args.report else 0


if __name__ == "__main__":
    sys.exit(main())
