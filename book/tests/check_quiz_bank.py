#!/usr/bin/env python3
"""Checks the book's practice quizzes (book/src/quizzes/*.toml) beyond mdbook-quiz's own validation.

The practice quizzes are read by mdbook-quiz in the browser, answers included. What the
exercises grade lives elsewhere, in the grader's bank (crates/grader/bank/*.toml, same
schema), which no chapter includes. This script checks what the book relies on besides:

  * every question has an `id`, unique across all files, and a `context` explanation;
  * the practice quizzes share no question id with the graded bank (a graded question copied
    into the book would print its answer in the page);
  * name-the-question.toml's scenarios are MultipleChoice with the choices exactly
    "Benchmark" and "Profile", as in the chapter;
  * every quiz file is shown by exactly one chapter, and every chapter of "The ideas" part of
    SUMMARY.md ends with a quiz.

The graded bank's own contract (choices, contexts, draw sizes) is tested by the grader
(`cargo nextest run -p grader`), and check_graded_not_in_book.py checks the built HTML.

Prints one line per check as `ok ...` or `FAIL ...`, then `quiz-bank: N passed, M failed`.
Usage: check_quiz_bank.py [BOOK_DIR]   (default: book)
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

QUIZ_INCLUDE = re.compile(r"\{\{#quiz\s+([^}]+?)\s*\}\}")


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def expect(self, condition: bool, what: str, why: str = "") -> None:
        if condition:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}{': ' + why if why else ''}")


def load_quizzes(quiz_dir: Path, checks: Checks) -> dict[str, list[dict]]:
    quizzes: dict[str, list[dict]] = {}
    for path in sorted(quiz_dir.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as err:
            checks.expect(False, f"{path} parses as TOML", str(err))
            continue
        quizzes[path.name] = data.get("questions", [])
    return quizzes


def choices(question: dict) -> list[str]:
    prompt = question.get("prompt", {})
    answer = question.get("answer", {}).get("answer")
    answers = answer if isinstance(answer, list) else [answer]
    return sorted([*answers, *prompt.get("distractors", [])])


def check_every_question(quizzes: dict[str, list[dict]], checks: Checks) -> None:
    seen: dict[str, str] = {}
    for name, questions in quizzes.items():
        checks.expect(bool(questions), f"{name} has questions")
        for index, question in enumerate(questions, start=1):
            qid = question.get("id")
            label = f"{name} question {index} ({qid or 'no id'})"
            checks.expect(bool(qid), f"{label} has an id")
            if qid:
                checks.expect(
                    qid not in seen,
                    f"{label} id is unique",
                    f"also used in {seen.get(qid)}",
                )
                seen[qid] = name
            checks.expect(
                bool(str(question.get("context", "")).strip()),
                f"{label} has a context explanation",
            )


def check_contracts(quizzes: dict[str, list[dict]], bank: dict[str, list[dict]], checks: Checks) -> None:
    graded = {q.get("id"): name for name, questions in bank.items() for q in questions}
    checks.expect(bool(graded), "the graded bank (crates/grader/bank) has questions")
    for name, questions in quizzes.items():
        for q in questions:
            qid = q.get("id")
            checks.expect(
                qid not in graded,
                f"{name} {qid} is not a graded question",
                f"the same id is graded in crates/grader/bank/{graded.get(qid)}; give the practice question its own id and words",
            )
    for q in quizzes.get("name-the-question.toml", []):
        qid = q.get("id")
        checks.expect(q.get("type") == "MultipleChoice", f"{qid} is MultipleChoice")
        checks.expect(
            choices(q) == ["Benchmark", "Profile"],
            f"{qid} choices are exactly Benchmark and Profile",
            f"found {choices(q)}",
        )


def idea_chapters(src: Path) -> list[Path]:
    """The chapters listed under the '# The ideas' part title of SUMMARY.md."""
    chapters: list[Path] = []
    in_ideas = False
    for line in (src / "SUMMARY.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            in_ideas = line.strip() == "# The ideas"
            continue
        link = re.search(r"\]\(([^)]+\.md)\)", line)
        if in_ideas and link:
            chapters.append(src / link.group(1))
    return chapters


def check_chapters(src: Path, quizzes: dict[str, list[dict]], checks: Checks) -> None:
    shown: dict[str, list[str]] = {}
    for chapter in sorted(src.rglob("*.md")):
        text = chapter.read_text(encoding="utf-8")
        for include in QUIZ_INCLUDE.findall(text):
            target = (chapter.parent / include).resolve()
            shown.setdefault(target.name, []).append(str(chapter.relative_to(src)))
            checks.expect(
                target.exists(),
                f"{chapter.relative_to(src)} shows an existing quiz ({include})",
            )
    for name in quizzes:
        places = shown.get(name, [])
        checks.expect(
            len(places) == 1,
            f"{name} is shown by exactly one chapter",
            f"shown by {places or 'none'}",
        )
    ideas = idea_chapters(src)
    checks.expect(len(ideas) >= 8, "SUMMARY.md lists the idea chapters", f"found {len(ideas)}")
    for chapter in ideas:
        text = chapter.read_text(encoding="utf-8").rstrip()
        checks.expect(
            bool(QUIZ_INCLUDE.search(text.splitlines()[-1] if text else "")),
            f"{chapter.relative_to(src)} ends with a quiz",
        )


def main() -> int:
    book = Path(sys.argv[1] if len(sys.argv) > 1 else "book")
    src = book / "src"
    checks = Checks()
    quizzes = load_quizzes(src / "quizzes", checks)
    bank = load_quizzes(book.resolve().parent / "crates/grader/bank", checks)
    check_every_question(quizzes, checks)
    check_contracts(quizzes, bank, checks)
    check_chapters(src, quizzes, checks)
    print(f"quiz-bank: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
