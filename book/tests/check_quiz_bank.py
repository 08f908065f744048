#!/usr/bin/env python3
"""Checks the course's question bank (book/src/quizzes/*.toml) beyond mdbook-quiz's own validation.

The quiz files are read by two programs: mdbook-quiz in the browser and the grader (through
mdbook-quiz-schema). `mdbook build` already validates each file's schema. This script checks
what the grader and the book rely on besides:

  * every question has an `id`, unique across all files, and a `context` explanation;
  * the contract files: name-the-question.toml holds ntq-1 ... ntq-6, MultipleChoice, with the
    choices exactly "Benchmark" and "Profile"; check-yourself.toml holds cy-double-traffic,
    cy-slower-than-vllm, cy-nsight-ttft (MultipleChoice) and cy-6ms-before-22ms (ShortAnswer);
  * every quiz file is shown by exactly one chapter, and every chapter of "The ideas" part of
    SUMMARY.md ends with a quiz.

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


def check_contracts(quizzes: dict[str, list[dict]], checks: Checks) -> None:
    ntq = {q.get("id"): q for q in quizzes.get("name-the-question.toml", [])}
    for n in range(1, 7):
        qid = f"ntq-{n}"
        q = ntq.get(qid)
        checks.expect(q is not None, f"name-the-question.toml defines {qid}")
        if q is None:
            continue
        checks.expect(q.get("type") == "MultipleChoice", f"{qid} is MultipleChoice")
        checks.expect(
            choices(q) == ["Benchmark", "Profile"],
            f"{qid} choices are exactly Benchmark and Profile",
            f"found {choices(q)}",
        )
    expected = {
        "cy-double-traffic": "MultipleChoice",
        "cy-slower-than-vllm": "MultipleChoice",
        "cy-nsight-ttft": "MultipleChoice",
        "cy-6ms-before-22ms": "ShortAnswer",
    }
    cy = {q.get("id"): q for q in quizzes.get("check-yourself.toml", [])}
    for qid, kind in expected.items():
        checks.expect(
            cy.get(qid, {}).get("type") == kind,
            f"check-yourself.toml defines {qid} as {kind}",
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
    check_every_question(quizzes, checks)
    check_contracts(quizzes, checks)
    check_chapters(src, quizzes, checks)
    print(f"quiz-bank: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
