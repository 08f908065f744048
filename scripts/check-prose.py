#!/usr/bin/env python3
"""Finds figures typed into the book's prose: a number with a unit that no markup accounts for.

Every figure the book quotes from a run is rendered from a measured file with
`{{#measured FILE.KEY}}` (book/measured/FILE.json); a number that is not a measurement (the
article's invented table, a hardware specification, a threshold, a hypothetical, arithmetic on
those) is marked `{{#given TEXT}}`. This check reads every Markdown file under book/src
(chapters, exercise pages, appendices, includes, tables included) and fails on any number with
a unit outside that markup, naming file:line and the text.

    python3 scripts/check-prose.py [PATH ...]    # default: book/src; exits 1 on any finding
    python3 scripts/check-prose.py --self-test   # the rules below, on positive and negative cases

What is not prose, and is skipped:
  - fenced code blocks (``` or ~~~, any indent): commands and example output;
  - inline code spans (`...`);
  - every {{#...}} directive ({{#measured}}, {{#given}}, {{#include}}, {{#quiz}}, the markers of
    {{#claim}}: the sentence between {{#claim NAME}} and {{#endclaim}} is prose and is checked);
  - HTML comments (<!-- ... -->, over several lines too), HTML tags with their attributes, and
    link destinations ("](...)" and <https://...>).

The rules, in order:
  1. A number starts a figure only at a word's start: not after a letter, digit, '_' or '.', and
     not after a letter and '-'. So H100, P90, f32, sm_90, x86, GPT-2, SmolLM2-135M and
     exercise-3 hold no number; "2-3 ms" does (a range).
  2. Units, after the number with one space or none: ms, µs (or μs, us), ns, s; GB/s, TB/s,
     MB/s, KB/s, B/s; GFLOP/s, TFLOP/s, PFLOP/s, FLOP/s; FLOP/B; tok/s, token/s, tokens/s,
     req/s; KB, kB, MB, GB, TB, KiB, MiB, GiB; %. A unit ends where a word would end, so
     "3 steps" or "2 sm_90" is no figure. A decade ("the 1990s") is not seconds.
  3. B alone is bytes only after a space ("98 B"): "8B" or "135M" is a model's size, and a
     letter with no number before it (B=1, T=8) is a shape.
  4. A percentage followed by "interval(s)", "confidence", "CI(s)" or "bootstrap" is a
     confidence level ("a 95% interval"), not a figure.
  5. × (or x written right after the number, as in "1.5x") is a ratio: "1.49×", "1.49× (a
     third less)", "4 × the median". With an operand (a number, '(', inline code, a marked
     figure, an italic one-letter variable) right after it, it is arithmetic or a shape and not
     a figure by itself: "8 × 3072", "64×3072", "100 × (n − 1)", "2 × *s*", "2 × `n`",
     "8x3072". Written right after the number, the operand must follow at once ("1.49× (" is a
     ratio); written with spaces around it, after spaces. The operands are checked on their
     own, so "2 × 3.35 TB/s" still fails on its TB/s.
  6. A {{#measured}} figure renders its own unit: a unit typed right after one is a finding.
     A unit right after {{#given ...}} belongs inside it: also a finding.
Units spelled as words (seconds, bytes, percent) are not checked.

Ends with "N findings in M files (K files checked)"; --self-test ends with "N passed, M failed".
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

NEXT_STEP = (
    "wrap a measurement in {{#measured FILE.KEY}} (book/measured/FILE.json), "
    "a number that is not a measurement in {{#given ...}}"
)

# Placeholders left where a skipped span was, so that rule 5 can see an operand and rule 6 a
# directive. Neither is a digit, a letter or a space.
CODE = "\x01"
DIRECTIVE_MEASURED = "\x02"
DIRECTIVE_GIVEN = "\x03"
DIRECTIVE_OTHER = "\x04"

NUMBER = r"(?<![\w.])(?<![A-Za-z]-)\d+(?:,\d{3})*(?:\.\d+)?"
SPACE = r"[ \u00a0\u2009\u202f]?"
# Longest first, so that GB/s is not read as GB.
UNITS = [
    "GFLOP/s", "TFLOP/s", "PFLOP/s", "FLOP/s", "FLOP/B",
    "GB/s", "TB/s", "MB/s", "KB/s", "kB/s",
    "tokens/s", "token/s", "tok/s", "req/s",
    "KiB", "MiB", "GiB", "KB", "kB", "MB", "GB", "TB",
    "ms", "µs", "μs", "us", "ns", "s",
]
UNIT = "(?:" + "|".join(re.escape(u) for u in UNITS) + r")(?![\w/])"
# What makes a × arithmetic or a shape rather than a ratio: an operand right after it.
OPERAND = r"(?:[\d(⅓⅔½¼¾" + CODE + DIRECTIVE_MEASURED + DIRECTIVE_GIVEN + r"]|[*_][A-Za-z][*_](?!\w))"
OPERAND_AFTER_TIMES = r"\s*" + OPERAND

DECADE = r"(?<![\w.])[12]\d{3}s(?!\w)"  # "the 1990s": not 1990 seconds

FIGURE = re.compile(
    "(?!" + DECADE + ")"
    + "(" + NUMBER + ")"
    + "(?:"
    + SPACE + "(?P<unit>" + UNIT + ")"
    + "|(?P<bytes> B)(?![\\w/=])"
    + "|" + SPACE + "(?P<percent>%)(?!\\s*(?:intervals?|confidence|CIs?|bootstrap)\\b)"
    + "|(?P<times>×)(?!" + OPERAND + ")"
    + "|[ \u00a0\u2009\u202f](?P<times_spaced>×)(?!" + OPERAND_AFTER_TIMES + ")"
    + "|(?P<x>x)(?![\\w])"
    + ")"
)
AFTER_DIRECTIVE = re.compile(
    "([" + DIRECTIVE_MEASURED + DIRECTIVE_GIVEN + "])"
    + "(" + SPACE + "(?:" + UNIT + "|%|×(?!" + OPERAND_AFTER_TIMES + ")| B(?![\\w/=])))"
)


def blank(match_text, placeholder=""):
    """What replaces a skipped span: its placeholder, and its newlines, so line numbers hold."""
    return placeholder + "\n" * match_text.count("\n")


def strip_fences(text):
    """Replaces fenced code blocks (their fence lines too) by empty lines."""
    out = []
    fence = None  # (char, length) of the open fence
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence is None:
            m = re.match(r"(`{3,}|~{3,})", stripped)
            if m:
                fence = (m.group(1)[0], len(m.group(1)))
                out.append("")
                continue
            out.append(line)
        else:
            m = re.match(r"(`{3,}|~{3,})\s*$", stripped)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1]:
                fence = None
            out.append("")
    return "\n".join(out)


def strip_inline_code(text):
    """Replaces `code spans` (a run of backticks closed by a run of the same length)."""
    out = []
    i = 0
    while i < len(text):
        if text[i] == "`":
            j = i
            while j < len(text) and text[j] == "`":
                j += 1
            run = text[i:j]
            close = re.compile(r"(?<!`)" + run + r"(?!`)").search(text, j)
            if close and "\n\n" not in text[j : close.start()]:
                out.append(blank(text[i : close.end()], CODE))
                i = close.end()
                continue
            out.append(run)
            i = j
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def directive_placeholder(match):
    name = match.group(1)
    if name == "measured":
        return blank(match.group(0), DIRECTIVE_MEASURED)
    if name == "given":
        return blank(match.group(0), DIRECTIVE_GIVEN)
    return blank(match.group(0), DIRECTIVE_OTHER)


def prose_of(text):
    """The page with everything that is not prose replaced; line numbers are kept."""
    text = re.sub(r"<!--.*?-->", lambda m: blank(m.group(0)), text, flags=re.S)
    text = strip_fences(text)
    text = re.sub(r"\{\{#(\w+).*?\}\}", directive_placeholder, text, flags=re.S)
    text = strip_inline_code(text)
    text = re.sub(r"<(?:https?://|mailto:)[^>\s]*>", lambda m: blank(m.group(0)), text)
    # A tag is an HTML name then attributes; a '<' in a sentence ("a<b") that reaches a '>' only
    # past the paragraph's end is not one.
    text = re.sub(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>",
                  lambda m: m.group(0) if "\n\n" in m.group(0) else blank(m.group(0)), text)
    text = re.sub(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)", lambda m: "]" + blank(m.group(0)), text)
    return text


def findings_in(text):
    """(line, figure, problem) for each figure typed into the prose of one page's text."""
    prose = prose_of(text)
    found = []
    for m in FIGURE.finditer(prose):
        line = prose.count("\n", 0, m.start()) + 1
        found.append((line, m.start(), m.group(0), "typed into the prose"))
    for m in AFTER_DIRECTIVE.finditer(prose):
        line = prose.count("\n", 0, m.start()) + 1
        unit = m.group(2).strip()
        if m.group(1) == DIRECTIVE_MEASURED:
            found.append((line, m.start(), "{{#measured ...}}" + m.group(2),
                          f"'{unit}' typed after a measured figure, which renders its own unit"))
        else:
            found.append((line, m.start(), "{{#given ...}}" + m.group(2),
                          f"'{unit}' typed after {{{{#given}}}}: put it inside the directive"))
    found.sort()
    return [(line, figure, problem) for line, _, figure, problem in found]


def markdown_files(paths):
    files = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(p.rglob("*.md")))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder (give book/src or a page)")
    return files


def check(paths, out=sys.stdout):
    """Prints one FAIL line per finding and a summary; returns the number of findings."""
    files = markdown_files(paths)
    per_file = {}
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            print(f"FAIL {f}: cannot read it ({e}); save it as UTF-8", file=out)
            per_file[f] = per_file.get(f, 0) + 1
            continue
        for line, figure, problem in findings_in(text):
            print(f"FAIL {f}:{line}: {figure.strip()!r} {problem}; {NEXT_STEP}", file=out)
            per_file[f] = per_file.get(f, 0) + 1
    total = sum(per_file.values())
    if per_file:
        print("findings per file:", file=out)
        for f, n in per_file.items():
            print(f"  {n:4d}  {f}", file=out)
    print(f"{total} findings in {len(per_file)} files ({len(files)} files checked)", file=out)
    return total


# --- self-test ----------------------------------------------------------------------------------

# (prose, the figures the check must report, in order). Every case is one rule's edge.
CASES = [
    # True positives: times, rates, sizes, shares, ratios.
    ("The step took 22.7 ms on this machine.", ["22.7 ms"]),
    ("a 22.7ms step", ["22.7ms"]),
    ("GELU took 529 µs, the fused op 12 μs and the launch 5 us.", ["529 µs", "12 μs", "5 us"]),
    ("about 20 ns per launch", ["20 ns"]),
    ("the run lasts 3 s", ["3 s"]),
    ("the run lasts 3s", ["3s"]),
    ("gelu is 36% of the step", ["36%"]),
    ("gelu is 36 % of the step", ["36 %"]),
    ("a 1.49× speed-up", ["1.49×"]),
    ("a 1.49 × speed-up", ["1.49 ×"]),
    ("1.5x faster", ["1.5x"]),
    ("at most 4 × the median", ["4 ×"]),
    ("an H100 reads 3.35 TB/s", ["3.35 TB/s"]),
    ("22.86 GB/s and 108 GFLOP/s", ["22.86 GB/s", "108 GFLOP/s"]),
    ("989 TFLOP/s dense", ["989 TFLOP/s"]),
    ("an intensity of 12.5 FLOP/B", ["12.5 FLOP/B"]),
    ("decode runs at 41 tok/s, 41 tokens/s, 1.6 req/s", ["41 tok/s", "41 tokens/s", "1.6 req/s"]),
    ("a 98 KB tensor, 1.6 MB, 80 GB, 141 GiB", ["98 KB", "1.6 MB", "80 GB", "141 GiB"]),
    ("the input is 98KB", ["98KB"]),
    ("a 64 B cache line", ["64 B"]),
    ("| gelu | 22.7 ms | 36% |", ["22.7 ms", "36%"]),
    ("took 1,200 ms", ["1,200 ms"]),
    ("between 2-3 ms", ["3 ms"]),
    ("from 0.352 to 0.318 GB/s", ["0.318 GB/s"]),
    ("**4 ms** saved", ["4 ms"]),
    ("a figure ending a line 4\u00a0ms", ["4\u00a0ms"]),
    ("arithmetic still fails on its unit: 2 × 3.35 TB/s", ["3.35 TB/s"]),
    ("a 1.49×\nspeed-up over two lines", ["1.49×"]),
    ("a 1.49× (a third less) speed-up", ["1.49×"]),
    ("2× faster, 2 ×faster", ["2×", "2 ×"]),
    ("{{#claim fusion-cpu}}Fusion saves 5 ms here.{{#endclaim}}", ["5 ms"]),
    ("[the link text says 3 ms](exercise-3.md)", ["3 ms"]),
    # Units after a directive.
    ("gelu takes {{#measured exercise-3.gelu.share}}% of the step", ["{{#measured ...}}%"]),
    ("the {{#measured exercise-3.step_ms}} ms step", ["{{#measured ...}} ms"]),
    ("the {{#given 6}} ms line", ["{{#given ...}} ms"]),
    # Not figures: names, shapes, identifiers, section numbers, years, thresholds in markup.
    ("GPT-2 small on an H100, P90 TTFT, sm_90, f32 and bf16, x86-64", []),
    ("B=1, T=8 and B = 1, T = 8", []),
    ("a Llama 3 8B model and SmolLM2-135M", []),
    ("R and 2R, 2*R*", []),
    ("Section 3.2, exercise 3, exercise-3, 2026-12-04, the 1990 paper", []),
    ("GPUs of the 2020s", []),
    ("a tensor of 8 × 3072 values, 64×3072 f32", []),
    ("8x3072 and 0x1F", []),
    ("rank p / 100 × (n − 1)", []),
    ("2 × *s* and 2 × `n`", []),
    ("a 95% interval, the 95% confidence level, a 95% CI, the 95% bootstrap interval", []),
    ("with percentiles and 95%\nintervals", []),
    ("95% of requests", ["95%"]),
    ("3 steps, 2 streams, 4 bytes, 3 seconds", []),
    ("`22.7 ms` in code and ``a ` 5 ms`` in code", []),
    ("the {{#measured exercise-3.step_ms}} step, {{#given 3.35 TB/s}} of bandwidth", []),
    ("{{#given 6 ms}} × {{#given 2/3}}", []),
    ("<!-- 22.7 ms, a note for authors -->", []),
    ('<img src="images/budget.svg" width="80%" alt="budget">', []),
    ('<figure>\n<img src="a.svg"\n     width="80%">\n</figure>', []),
    ("if a<b then 5 ms\n\nlater >", ["5 ms"]),
    ("see <https://example.com/5ms> and [the run](https://example.com/x/3%20s)", []),
    ("{{#include ../images/table.txt}} and {{#quiz ../quizzes/a.toml}}", []),
    ("```console\n$ gpt2 profile\ngelu 22.7 ms 36%\n```", []),
    ("  ~~~\n  3 ms\n  ~~~\nafter the fence", []),
    ("````md\n```\n5 ms\n```\n````", []),
    ("exercise 3's table, the 2's complement", []),
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

    for text, expected in CASES:
        got = [figure for _, figure, _ in findings_in(text)]
        result(got == expected, repr(text), f": expected {expected}, got {got}")

    # A page on disk: line numbers survive code blocks, comments and multi-line directives, and
    # the message names the file, the line and the next step.
    page = (
        "# A page\n"
        "\n"
        "<!-- a comment\n"
        "over 2 lines, 5 ms -->\n"
        "```console\n"
        "gelu 22.7 ms\n"
        "```\n"
        "{{#given 6 ms\n"
        "and more}} then the step took 22.7 ms.\n"
        "| op | share |\n"
        "|---|---|\n"
        "| gelu | 36% |\n"
    )
    with tempfile.TemporaryDirectory() as d:
        sub = Path(d) / "exercises"
        sub.mkdir()
        (sub / "exercise-9.md").write_text(page, encoding="utf-8")
        (Path(d) / "clean.md").write_text("GPT-2 on an H100, B=1 T=8.\n", encoding="utf-8")
        import io

        buf = io.StringIO()
        n = check([d], out=buf)
        lines = buf.getvalue().splitlines()
        fails = [l for l in lines if l.startswith("FAIL")]
        result(n == 2, "a page on disk: two findings", f": got {n}: {lines}")
        result(
            len(fails) == 2
            and fails[0].startswith(f"FAIL {sub / 'exercise-9.md'}:9: '22.7 ms'")
            and fails[1].startswith(f"FAIL {sub / 'exercise-9.md'}:12: '36%'"),
            "findings name file:line and the figure",
            f": got {fails}",
        )
        result(
            all(NEXT_STEP in l for l in fails),
            "every finding says what to do next",
            f": got {fails}",
        )
        result(
            lines[-1] == "2 findings in 1 files (2 files checked)",
            "the last line counts findings and files",
            f": got {lines[-1]!r}",
        )
        buf = io.StringIO()
        result(check([Path(d) / "clean.md"], out=buf) == 0, "a clean page has no finding",
               f": got {buf.getvalue()!r}")

    print(f"{passed} passed, {failed} failed")
    return failed == 0


def main():
    parser = argparse.ArgumentParser(
        description="Fails on numbers with units typed into the book's prose "
        "(outside code, {{#measured}}, {{#given}} and comments).",
        epilog="The rules are in this script's docstring (python3 -m pydoc scripts/check-prose.py "
        "or read its head).",
    )
    parser.add_argument("paths", nargs="*", default=None, help="pages or folders (default: book/src)")
    parser.add_argument("--self-test", action="store_true", help="check the rules on built-in cases")
    args = parser.parse_args()
    if args.self_test:
        return 0 if run_self_test() else 1
    paths = args.paths or [Path(__file__).resolve().parent.parent / "book" / "src"]
    paths = [Path(p).resolve().relative_to(Path.cwd()) if Path(p).resolve().is_relative_to(Path.cwd())
             else Path(p) for p in paths]
    try:
        return 1 if check(paths) else 0
    except FileNotFoundError as e:
        print(f"FAIL {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
