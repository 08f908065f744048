#!/usr/bin/env python3
"""Checks that every reason the course gives for the activation line is one of three cases.

The book explains why the activation / element-wise line of a profile is long in one place,
book/src/includes/activation-line.md, a table of three cases named by these phrases:

    "slow kernel"               a CPU: candle's per-element GELU runs far below its roofline
    "launch overhead"           a small-batch GPU decode: each kernel's fixed cost dominates
    "extra passes over memory"  large tensors (prefill, large batches): each op reads and
                                writes the whole tensor

Everything a learner reads (the book's chapters, the practice quizzes, the graded bank, the
answer key's rubrics, the exercise manifest's hints) must agree with that table. This script
finds each *place* that gives a reason for the activation line and checks it:

  * a place is a Markdown paragraph, list item, table row or heading of book/src/**/*.md
    (fenced code blocks are skipped), or one string of a TOML file (book/src/quizzes/*.toml,
    crates/grader/bank/**/*.toml, crates/grader/key/key.toml, exercises/info.toml), except a
    question's distractors, which are wrong on purpose;
  * it gives a reason for the activation line when it names the line (activation, activations,
    GELU in any spelling, element-wise, elementwise; not "activation rows", which are a
    matmul's input) together with a reason word (because, due to, its time is, the time goes to, spends its time,
    slow, bound, overhead, dominates, waste, cost, fixed cost, passes over memory, excess, or
    one of the large-tensor phrasings below);
  * such a place must name one of the three cases (a hyphen may stand for the space, as in
    the mechanism names `slow-kernel` and `launch-overhead`) or include the table;
  * and it must not use a phrasing that describes only the large-tensor case ("close to the
    memory ceiling", "near the memory ceiling", "excess memory reads", "extra memory reads",
    "memory traffic", "memory-bound" or "memory bound") unless it names that case itself:
    "extra passes over memory", or large tensors, prefill, or large batches.

The article's own account is the exception: a place that attributes its reason to the article
or Kiely, or speaks of the article's illustrative 40 ms budget (and every string of a question
about that budget, or of a rubric or question whose id starts with `article-`), gives the
article's answer, excess memory reads, which the course accepts as the article gives it. A
rubric's `any` and `wrong` phrase lists are matched, not read, and are skipped like distractors.

Prints one `FAIL file:line: ...` per failing place, then one line with the counts; exits 1 on
any failure. `--self-test` runs the rules on built-in good and bad samples instead.

Usage: check-activation-reasons.py [REPO_ROOT]   (default: the repository this script is in)
       check-activation-reasons.py --self-test
"""

from __future__ import annotations

import re
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

CASE_PHRASES = ("slow kernel", "launch overhead", "extra passes over memory")
CASE = re.compile(r"\bslow[- ]kernels?\b|\blaunch[- ]overheads?\b|\bextra passes over memory\b", re.I)
INCLUDE = re.compile(r"\{\{#include\s+[^}\s]*includes/activation-line\.md\s*\}\}")

# What names the line. "activation rows" (or values, inputs) are what a matmul multiplies.
SUBJECT = re.compile(
    r"\bactivations?\b(?!['’]?\s+(rows?|values?|inputs?|matri(x|ces))\b)|gelu|\belement-?wise\b",
    re.I,
)
REASON = re.compile(
    r"\bbecause\b|\bdue to\b|\b(its|their|whose|the line['’]s) time (is|was|goes|went)\b|\btime (goes|went) (in)?to\b"
    r"|\b(spends?|spending|spent)\b[^.;:]{0,25}\btime\b|\btime\b[^.;:]{0,10}\bspent\b"
    r"|\bslow(er|est|ly|ness)?\b|\bbound\b|\boverheads?\b|\bdominat\w*|\bwast(e|ed|es|eful|ing)\b"
    r"|\bcosts?\b|\bfixed cost|\bpasses over memory\b|\bexcess\b",
    re.I,
)
# Phrasings true only of the large-tensor case.
LARGE_ONLY = {
    "close to the memory ceiling": re.compile(r"\bclose to the memory ceiling\b", re.I),
    "near the memory ceiling": re.compile(r"\bnear the memory ceiling\b", re.I),
    "excess memory reads": re.compile(r"\bexcess memory reads\b", re.I),
    "extra memory reads": re.compile(r"\bextra memory reads\b", re.I),
    "memory traffic": re.compile(r"\bmemory traffic\b", re.I),
    "memory-bound": re.compile(r"\bmemory[- ]bound\b", re.I),
}
LARGE_CASE = re.compile(
    r"\bextra passes over memory\b|\blarge(r)? tensors?\b|\bprefills?\b|\blarge(r)? batch(es)?\b", re.I
)


def gives_reason(text: str) -> bool:
    """Whether the text names the activation line together with a reason for its time."""
    return bool(SUBJECT.search(text)) and (
        bool(REASON.search(text)) or any(p.search(text) for p in LARGE_ONLY.values())
    )


@dataclass
class Place:
    file: str
    line: int
    text: str


# The article's own account of its illustrative 40 ms budget (Kiely's mechanism: excess memory
# reads) is a right answer as the article gives it; the three cases are the course's extension
# for measured profiles. A place that attributes its reason to the article or Kiely, or speaks of
# that budget, is the article's, and a question about that budget answers as the article does.
EMPTY_FIELD = re.compile(r'[\w-]+\s*=\s*""')
ARTICLE = re.compile(r"\bthe article\b|\bKiely\b|\b40 ms\b", re.I)


def problems_of(place: Place) -> list[str]:
    """Why this place breaks the rules (empty when it gives no reason or gives a good one)."""
    # An answers template's empty fields (`article-activations-first = ""`) are names, not words.
    text = EMPTY_FIELD.sub("", place.text)
    if not gives_reason(text) or ARTICLE.search(text):
        return []
    found = []
    if not (CASE.search(text) or INCLUDE.search(text)):
        found.append(
            "gives a reason for the activation line without naming its case "
            f"(name one of {', '.join(repr(c) for c in CASE_PHRASES)}, or include the table)"
        )
    if not LARGE_CASE.search(text):
        for phrase, pattern in LARGE_ONLY.items():
            if pattern.search(text):
                found.append(
                    f"says {phrase!r}, which holds only with large tensors; name that case "
                    "('extra passes over memory', large tensors, prefill or large batches) or drop it"
                )
    return found


# --- places in Markdown ----------------------------------------------------------------------
LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+")
TABLE_ROW = re.compile(r"^\s*\|")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
HEADING = re.compile(r"^#{1,6}\s")
FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_places(path: Path, name: str) -> list[Place]:
    places: list[Place] = []
    current: list[str] = []
    start = 0

    def flush() -> None:
        nonlocal current
        if current:
            places.append(Place(name, start, " ".join(s.strip() for s in current)))
        current = []

    in_fence = False
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if not line.strip():
            flush()
            continue
        if TABLE_RULE.match(line):
            flush()
            continue
        # A heading, a table row and a list item each start a place of their own; a heading and
        # a table row also end theirs.
        if HEADING.match(line) or TABLE_ROW.match(line) or LIST_ITEM.match(line):
            flush()
            start = lineno
            current = [line]
            if HEADING.match(line) or TABLE_ROW.match(line):
                flush()
            continue
        if not current:
            start = lineno
        current.append(line)
    flush()
    return places


# --- places in TOML --------------------------------------------------------------------------
def strings(value, key: str = ""):
    """Every string in a parsed TOML value, with the dotted key it sits under."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(v, f"{key}.{k}" if key else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings(v, f"{key}[{i}]")


def line_of(raw: str, value: str, key: str) -> int:
    """The line of the TOML file where `value` starts (tomllib keeps no positions)."""
    first = next((s.strip() for s in value.splitlines() if s.strip()), "")
    for length in (40, 20, 10):
        snippet = first[:length]
        # Basic strings escape quotes and backslashes; search as the file spells them.
        for spelled in (snippet, snippet.replace("\\", "\\\\").replace('"', '\\"')):
            at = raw.find(spelled) if spelled else -1
            if at >= 0:
                return raw.count("\n", 0, at) + 1
    leaf = re.sub(r"\[\d+\]$", "", key).split(".")[-1]
    match = re.search(rf"^\s*{re.escape(leaf)}\s*=", raw, re.M)
    return raw.count("\n", 0, match.start()) + 1 if match else 1


# A quiz's wrong options are wrong reasons on purpose: they are not the course's account. A
# rubric's `any` and `wrong` lists are phrases it matches, not reasons it gives.
DISTRACTOR = re.compile(r"(^|\.)(distractors|any|wrong)\[\d+\]$")
QUESTION = re.compile(r"^questions\[(\d+)\]")


def toml_places(path: Path, name: str) -> tuple[list[Place], str | None]:
    raw = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as err:
        return [], f"{name}: not valid TOML ({err})"
    places = []
    for key, value in strings(data):
        if DISTRACTOR.search(key) or "article-" in key:
            continue
        question = QUESTION.match(key)
        if question:
            q = data["questions"][int(question.group(1))]
            about = f"{q.get('id', '')} {q.get('prompt', {}).get('prompt', '')}"
            if about.startswith("article-") or ARTICLE.search(about):
                continue
        places.append(Place(name, line_of(raw, value, key), " ".join(value.split())))
    return places, None


# --- the scan --------------------------------------------------------------------------------
def files_to_scan(root: Path) -> tuple[list[Path], list[Path]]:
    markdown = sorted((root / "book/src").rglob("*.md"))
    toml = [
        *sorted((root / "book/src/quizzes").glob("*.toml")),
        *sorted((root / "crates/grader/bank").rglob("*.toml")),
        root / "crates/grader/key/key.toml",
        root / "exercises/info.toml",
    ]
    return markdown, [p for p in toml if p.is_file()]


def check_table(root: Path) -> list[str]:
    """The one-place table exists and names each case."""
    table = root / "book/src/includes/activation-line.md"
    if not table.is_file():
        return [f"{table.relative_to(root)}: missing (the one table of why the activation line is long)"]
    text = table.read_text(encoding="utf-8")
    return [
        f"{table.relative_to(root)}: does not name the case {case!r}"
        for case in CASE_PHRASES
        if not re.search(re.escape(case), text, re.I)
    ]


def scan(root: Path) -> tuple[int, list[str]]:
    failures = check_table(root)
    markdown, toml = files_to_scan(root)
    places: list[Place] = []
    for path in markdown:
        places += markdown_places(path, str(path.relative_to(root)))
    for path in toml:
        found, error = toml_places(path, str(path.relative_to(root)))
        places += found
        if error:
            failures.append(error)
    reasons = 0
    for place in places:
        reasons += gives_reason(place.text)
        for problem in problems_of(place):
            excerpt = place.text if len(place.text) <= 100 else place.text[:97] + "..."
            failures.append(f"{place.file}:{place.line}: {problem}: \"{excerpt}\"")
    return reasons, failures


# --- self-test -------------------------------------------------------------------------------
BAD_MD = """\
# A chapter

The profile shows the activation ops of a decode step close to the memory ceiling, so the
time goes into excess memory reads.

- GELU is slow because it is memory-bound.
- The element-wise line is a launch overhead case: its time is memory traffic.

Each matmul multiplies a few activation rows by a whole weight matrix: it is memory-bound.

```text
gelu  is slow because of memory traffic (a code block: never a place)
```
"""
GOOD_MD = """\
# A chapter

On a CPU the GELU row is a slow kernel: candle computes a scalar tanh per element.

With large tensors (a prefill) the element-wise ops are memory-bound: each one makes extra
passes over memory, which fusion removes.

In a small-batch decode the activation kernels' time is each kernel's fixed cost (launch
overhead).

Why is the activation line long? It depends on the machine:

{{#include ../includes/activation-line.md}}

The activations line takes 15% of the step. A colleague wants to spend the week on the GELU.

Each matmul multiplies a few activation rows by a whole weight matrix: it is memory-bound.

| line | self time |
|---|---|
| activations and element-wise ops | 6 ms |

The article's answer: the activations line is large for the little math it does, the likelier
sign of waste, such as excess memory reads that a fused kernel removes.
"""
BAD_TOML = '''\
[[questions]]
id = "bad-1"
prompt.prompt = "Why do the activations take 6 ms?"
context = """
Their time is memory traffic: the activations run near the memory ceiling.
"""
hints = ["GELU is slow: fuse it."]
'''
GOOD_TOML = '''\
[[questions]]
id = "good-1"
prompt.prompt = "Why do the activations take 6 ms?"
context = """
At batch 4 the activations' time is launch overhead: each kernel's fixed cost.
"""
hints = ["On a CPU, gelu is a slow kernel; with a prefill's large tensors, extra passes over memory cost the time."]

[[questions]]
id = "good-2"
prompt.prompt = "Why is the GELU row long in a batch-1 decode on a GPU?"
prompt.distractors = ["Its time is memory traffic: the activations run near the memory ceiling."]
answer.answer = "Each of its kernels pays a launch overhead far larger than moving its kilobytes."

[[questions]]
id = "good-3"
prompt.prompt = "In the 40 ms budget, why attack the activations line first?"
answer.answer = "It is large for little math: the sign of waste, extra memory reads a fused kernel removes."

[exercise-6.rubrics.article-activations-first]
ideas = [
  { idea = "the activations line is large for the little math it does: the sign of waste", any = ["memory-bound"], wrong = ["activation* are compute bound"] },
]

[exercise-6.template]
text = 'article-activations-first = ""'
'''
EXPECTED_BAD = {
    ("chapter.md", 3, "naming its case"),
    ("chapter.md", 3, "'close to the memory ceiling'"),
    ("chapter.md", 3, "'excess memory reads'"),
    ("chapter.md", 6, "naming its case"),
    ("chapter.md", 6, "'memory-bound'"),
    ("chapter.md", 7, "'memory traffic'"),
    ("quiz.toml", 5, "naming its case"),
    ("quiz.toml", 5, "'memory traffic'"),
    ("quiz.toml", 5, "'near the memory ceiling'"),
    ("quiz.toml", 7, "naming its case"),
}


def self_test() -> int:
    failed = 0

    def expect(condition: bool, what: str) -> None:
        nonlocal failed
        print(f"{'ok  ' if condition else 'FAIL'} self-test: {what}")
        failed += not condition

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, text in [("bad/chapter.md", BAD_MD), ("good/chapter.md", GOOD_MD), ("bad/quiz.toml", BAD_TOML), ("good/quiz.toml", GOOD_TOML)]:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        found = set()
        for kind in ("bad", "good"):
            places = markdown_places(root / kind / "chapter.md", "chapter.md")
            places += toml_places(root / kind / "quiz.toml", "quiz.toml")[0]
            problems = [(p, problem) for p in places for problem in problems_of(p)]
            if kind == "good":
                for p, problem in problems:
                    print(f"     unexpected: {p.file}:{p.line}: {problem}")
                expect(not problems, "the good samples pass (a case named, the table included, text that gives no reason, a distractor, the article's own account of its 40 ms budget, a rubric's phrases, an empty answers field)")
            else:
                found = {(p.file, p.line, key) for p, problem in problems for (f, l, key) in EXPECTED_BAD if f == p.file and l == p.line and key in problem}
                flagged = {(p.file, p.line) for p, _ in problems}
        for file, line, key in sorted(EXPECTED_BAD):
            expect((file, line, key) in found, f"the bad sample {file}:{line} fails for {key}")
        expect((("chapter.md", 9)) not in flagged, "a matmul's activation rows are not the activation line")
        expect(not any(line == 12 for file, line in flagged if file == "chapter.md"), "a fenced code block is skipped")
    print(f"activation-line self-test: {len(EXPECTED_BAD) + 3 - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if "--self-test" in argv:
        return self_test()
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    reasons, failures = scan(root)
    for failure in failures:
        print(f"FAIL {failure}")
    print(
        f"activation-line reasons: {reasons} places give a reason for the activation line, "
        f"{len(failures)} problem(s)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
