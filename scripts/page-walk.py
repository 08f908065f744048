#!/usr/bin/env python3
"""The page walk: runs the commands the README and the book tell a reader to type, in order.

Every ```console (or ```sh) block of README.md, of the book's pages (in SUMMARY.md's order) and
of the exercises' READMEs is a step: its lines run as one bash script (`set -e`) in the
repository's root, as a reader would type them there after the build, with target/debug and
target/tools/bin on PATH, the
Hugging Face hub offline (the synthetic models stand in) and a learner id in COURSE_LEARNER_ID.
A step passes when it exits 0 (or the code its annotation expects) and prints every text its
annotation expects.

An annotation is an HTML comment right before the block, which neither mdBook nor GitHub shows:

    <!-- walk
    expect: Not passed yet         the output must contain this text (repeatable)
    exit: 1                        the exit code the page says the step ends with [default 0]
    stdin: 1\\n2\\n                 what the reader types (\\n for Enter)
    quick: --requests 40 => --requests 8
                                   a quicker setting for a step that takes minutes: the text on
                                   the left is replaced in the commands (it must occur)
    env: NAME=VALUE                an environment variable for this step
    timeout: 300                   seconds [default 300]
    skip: needs an NVIDIA GPU      not run here, and why (counted and printed)
    background: server             the block keeps running (a server the page starts in one
                                   terminal): the walk starts it, waits until it is ready, and
                                   goes on to the next steps while it runs
    ready: port 8000               ... ready when 127.0.0.1:8000 accepts a connection (or
    ready: text Listening          when its output says this text) [default: at once]
    stop: server                   after this step, stop the background step of that name
    -->

An annotation that no block follows is a hidden step: its `run:` lines run (set-up a page
assumes, such as a folder of submissions), with the same expect/exit rules.

A server a step starts with `&` and does not stop is stopped when the step ends (the step runs
in its own process group); a `background` step still running when its page ends is stopped
then. The walk runs in place, so what the commands write lands where a
reader's would; afterwards it puts exercises/ back as it was and removes every file the walk
created outside target/. (A clone elsewhere would compile every workspace crate again: cargo
keys a path package's build by its path.)

    scripts/page-walk.py                 # every page
    scripts/page-walk.py --list          # the steps, without running them
    scripts/page-walk.py --only exercise-3.md,exercise-4.md
    scripts/page-walk.py --self-test

Ends with "N passed, M failed, K skipped" and exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([A-Za-z0-9_,+-]*)")
RUN_LANGS = {"console", "sh"}
KEYS = {"expect", "exit", "stdin", "quick", "env", "timeout", "skip", "run", "background", "ready", "stop"}


@dataclass
class Step:
    page: str
    line: int
    commands: list[str]
    expect: list[str] = field(default_factory=list)
    exit: int = 0
    stdin: str = ""
    quick: list[tuple[str, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    timeout: int = 300
    skip: str = ""
    hidden: bool = False
    background: str = ""
    ready: tuple[str, str] | None = None
    stop: list[str] = field(default_factory=list)

    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def script(self) -> str:
        text = "\n".join(self.commands)
        for old, new in self.quick:
            text = text.replace(old, new)
        return text


class PageError(Exception):
    pass


def parse_annotation(lines: list[str], page: str, line: int) -> dict:
    """The directives of one `<!-- walk ... -->` comment (its inner lines)."""
    out: dict = {"expect": [], "quick": [], "env": {}, "run": [], "stop": []}
    for offset, raw in enumerate(lines):
        text = raw.strip()
        if not text:
            continue
        key, sep, value = text.partition(":")
        key = key.strip()
        value = value.strip()
        if not sep or key not in KEYS:
            raise PageError(
                f"{page}:{line + offset}: '{text}' is not a walk directive "
                f"(one of {', '.join(sorted(KEYS))}, as 'key: value')"
            )
        if key == "expect":
            out["expect"].append(value)
        elif key in ("run", "stop"):
            out[key].append(value)
        elif key == "ready":
            kind, _, what = value.partition(" ")
            if kind == "port" and what.strip().isdigit():
                out["ready"] = ("port", what.strip())
            elif kind == "text" and what.strip():
                out["ready"] = ("text", what.strip())
            else:
                raise PageError(f"{page}:{line + offset}: ready needs 'port N' or 'text TEXT'")
        elif key == "quick":
            old, arrow, new = value.partition("=>")
            if not arrow or not old.strip():
                raise PageError(f"{page}:{line + offset}: quick needs 'OLD => NEW'")
            out["quick"].append((old.strip(), new.strip()))
        elif key == "env":
            name, eq, val = value.partition("=")
            if not eq:
                raise PageError(f"{page}:{line + offset}: env needs NAME=VALUE")
            out["env"][name.strip()] = val
        elif key in ("exit", "timeout"):
            try:
                out[key] = int(value)
            except ValueError:
                raise PageError(f"{page}:{line + offset}: {key} needs a number, not '{value}'")
        elif key == "stdin":
            out["stdin"] = value.encode().decode("unicode_escape")
        else:
            out[key] = value
    return out


def parse_page(text: str, page: str) -> list[Step]:
    """The steps of one page, in order."""
    lines = text.splitlines()
    steps: list[Step] = []
    pending: tuple[int, dict] | None = None
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("<!-- walk"):
            start = i
            body: list[str] = []
            rest = stripped[len("<!-- walk") :]
            if rest.strip().endswith("-->"):
                body.append(rest.strip()[:-3])
            else:
                body.append(rest)
                i += 1
                while i < len(lines) and "-->" not in lines[i]:
                    body.append(lines[i])
                    i += 1
                if i == len(lines):
                    raise PageError(f"{page}:{start + 1}: the walk comment is not closed (-->)")
                body.append(lines[i].split("-->")[0])
            if pending is not None:
                steps.append(hidden_step(page, *pending))
            pending = (start + 1, parse_annotation(body, page, start + 1))
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if fence:
            marker, lang = fence.group(2), fence.group(3).split(",")[0]
            start = i
            i += 1
            body = []
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i])
                i += 1
            i += 1
            if lang in RUN_LANGS:
                if pending and pending[1].get("run"):
                    # A hidden step's annotation ends before the block: set-up, then the block.
                    steps.append(hidden_step(page, *pending))
                    pending = None
                annotation = pending[1] if pending else {}
                pending = None
                indent = len(fence.group(1))
                commands = [strip_prompt(b[indent:] if b[:indent].isspace() else b) for b in body]
                steps.append(make_step(page, start + 1, commands, annotation))
            elif pending is not None:
                raise PageError(
                    f"{page}:{pending[0]}: a walk annotation stands before a ```{lang or 'text'} "
                    "block; it belongs right before a ```console block"
                )
            continue
        if stripped and pending is not None and not pending[1].get("run"):
            raise PageError(
                f"{page}:{pending[0]}: a walk annotation must stand right before its ```console "
                "block (or hold run: lines)"
            )
        if stripped and pending is not None:
            steps.append(hidden_step(page, *pending))
            pending = None
        i += 1
    if pending is not None:
        if not pending[1].get("run"):
            raise PageError(f"{page}:{pending[0]}: a walk annotation with no block after it")
        steps.append(hidden_step(page, *pending))
    return steps


def strip_prompt(line: str) -> str:
    return line[2:] if line.startswith("$ ") else line


def make_step(page: str, line: int, commands: list[str], a: dict) -> Step:
    step = Step(page=page, line=line, commands=commands)
    step.expect = a.get("expect", [])
    step.exit = a.get("exit", 0)
    step.stdin = a.get("stdin", "")
    step.quick = a.get("quick", [])
    step.env = a.get("env", {})
    step.timeout = a.get("timeout", 300)
    step.skip = a.get("skip", "")
    step.background = a.get("background", "")
    step.ready = a.get("ready")
    step.stop = a.get("stop", [])
    if step.ready and not step.background:
        raise PageError(f"{page}:{line}: ready belongs to a background step")
    for old, _ in step.quick:
        if old not in "\n".join(commands):
            raise PageError(f"{page}:{line}: quick's '{old}' does not occur in the block's commands")
    return step


def hidden_step(page: str, line: int, a: dict) -> Step:
    step = make_step(page, line, a.get("run", []), a)
    step.hidden = True
    return step


def pages_in_order(root: Path) -> list[str]:
    """README.md, the book's pages in SUMMARY.md's order, then each exercise's README."""
    pages = ["README.md"]
    summary = root / "book/src/SUMMARY.md"
    for m in re.finditer(r"\]\(([^)]+\.md)\)", summary.read_text(encoding="utf-8")):
        pages.append(f"book/src/{m.group(1)}")
    pages += sorted(str(p.relative_to(root)) for p in root.glob("exercises/*/README.md"))
    return pages


def run_step(step: Step, root: Path, env: dict[str, str]) -> tuple[bool, str]:
    step_env = dict(env)
    step_env.update(step.env)
    script = "set -e\n" + step.script() + "\n"
    started = time.monotonic()
    # Output goes to a file, not a pipe: a server the step leaves running in the background
    # would hold a pipe open, and the step would seem to run until that server ends.
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            ["bash", "-c", script],
            cwd=root,
            env=step_env,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.communicate(step.stdin.encode(), timeout=step.timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
        finally:
            stop_group(proc)
        log.seek(0)
        out = log.read()
    if code is None:
        return False, f"still running after {step.timeout} s\n" + out.decode(errors="replace")
    text = out.decode(errors="replace")
    problems = []
    if code != step.exit:
        problems.append(f"exit code {code}, the page expects {step.exit}")
    problems += [f"the output does not say '{e}'" for e in step.expect if e not in text]
    took = time.monotonic() - started
    if problems:
        return False, "; ".join(problems) + "\n" + text
    return True, f"{took:.1f} s"


class Background:
    """A step left running while the walk goes on (a server in the reader's other terminal)."""

    def __init__(self, step: Step, root: Path, env: dict[str, str]):
        step_env = dict(env)
        step_env.update(step.env)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            ["bash", "-c", "set -e\n" + step.script() + "\n"],
            cwd=root, env=step_env, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def wait_ready(self, step: Step) -> tuple[bool, str]:
        deadline = time.monotonic() + step.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False, f"ended (exit code {self.proc.returncode}) before it was ready\n" + self.output()
            if step.ready is None:
                return True, "started"
            kind, what = step.ready
            if kind == "text" and what in self.output():
                return True, f"ready: says '{what}'"
            if kind == "port":
                try:
                    socket.create_connection(("127.0.0.1", int(what)), timeout=1).close()
                    return True, f"ready: port {what} answers"
                except OSError:
                    pass
            time.sleep(0.5)
        return False, f"not ready after {step.timeout} s ({step.ready[0]} {step.ready[1]})\n" + self.output()

    def stop(self) -> None:
        stop_group(self.proc)
        self.proc.wait()
        self.log.close()


def stop_group(proc: subprocess.Popen) -> None:
    """Stops whatever the step left running (its process group), politely first."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        for _ in range(50):
            if not live_members(proc.pid):
                return
            time.sleep(0.1)


def live_members(group: int) -> bool:
    """Whether a process of the group is still running (zombies waiting to be reaped are not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def untracked(root: Path) -> set[str]:
    out = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "--directory", "-z"],
        cwd=root, capture_output=True, check=True,
    ).stdout.decode()
    ignored = subprocess.run(
        ["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"],
        cwd=root, capture_output=True, check=True,
    ).stdout.decode()
    return {p for p in (out + ignored).split("\0") if p and not p.startswith("target/")}


class Restore:
    """Puts exercises/ back as it was, and removes what the walk created outside target/."""

    def __init__(self, root: Path):
        self.root = root

    def __enter__(self):
        self.backup = Path(tempfile.mkdtemp(prefix="page-walk-"))
        if (self.root / "exercises").exists():
            shutil.copytree(self.root / "exercises", self.backup / "exercises", symlinks=True)
        self.before = untracked(self.root)
        return self

    def __exit__(self, *exc):
        for path in sorted(untracked(self.root) - self.before):
            target = self.root / path
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
        if (self.backup / "exercises").exists():
            shutil.rmtree(self.root / "exercises", ignore_errors=True)
            shutil.copytree(self.backup / "exercises", self.root / "exercises", symlinks=True)
        shutil.rmtree(self.backup, ignore_errors=True)
        return False


def report(s: Step, ok: bool, detail: str, passed: int, failed: int) -> tuple[int, int]:
    if ok:
        print(f"ok   {s.where()} ({detail.splitlines()[0]})")
        return passed + 1, failed
    print(f"FAIL {s.where()}: {detail.splitlines()[0]}")
    print("     commands:\n" + "\n".join("       " + c for c in s.script().splitlines()))
    print("     output (last 40 lines):")
    for line in detail.splitlines()[1:][-40:]:
        print("       " + line)
    print("     next step: run those commands by hand from the repository root; fix "
          "the page or the program, or its walk annotation")
    return passed, failed + 1


def walk(root: Path, pages: list[str], list_only: bool) -> int:
    steps: list[Step] = []
    errors = 0
    for page in pages:
        path = root / page
        if not path.exists():
            print(f"FAIL {page}: listed in SUMMARY.md but missing")
            errors += 1
            continue
        try:
            steps += parse_page(path.read_text(encoding="utf-8"), page)
        except PageError as e:
            print(f"FAIL {e}")
            errors += 1
    if list_only:
        for s in steps:
            tag = "skip" if s.skip else ("hidden" if s.hidden else ("bg" if s.background else "run"))
            print(f"{tag:6} {s.where()}: {s.script().splitlines()[0] if s.commands else ''}")
        return 1 if errors else 0
    env = dict(os.environ)
    env["PATH"] = f"{root / 'target/debug'}:{root / 'target/tools/bin'}:{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    # A reader in a terminal is asked for a learner id the first time; the walk has no terminal,
    # so it gives one the way the programs' own message says (course-dev check covers the asking).
    env.setdefault("COURSE_LEARNER_ID", "page-walk")
    env.setdefault("CARGO_TERM_COLOR", "never")
    passed = failed = skipped = 0
    failed += errors
    running: dict[str, Background] = {}
    with Restore(root):
        try:
            for i, s in enumerate(steps):
                if s.skip:
                    skipped += 1
                    print(f"skip {s.where()}: {s.skip}")
                elif s.background:
                    server = Background(s, root, env)
                    ok, detail = server.wait_ready(s)
                    if ok:
                        running[s.background] = server
                    else:
                        server.stop()
                    passed, failed = report(s, ok, detail, passed, failed)
                else:
                    ok, detail = run_step(s, root, env)
                    passed, failed = report(s, ok, detail, passed, failed)
                for name in s.stop:
                    if name in running:
                        running.pop(name).stop()
                page_ends = i + 1 == len(steps) or steps[i + 1].page != s.page
                if page_ends:
                    for server in running.values():
                        server.stop()
                    running.clear()
        finally:
            for server in running.values():
                server.stop()
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


class SelfTest(unittest.TestCase):
    def test_blocks_annotations_and_hidden_steps(self):
        page = "\n".join([
            "Intro.",
            "```console",
            "$ echo one",
            "```",
            "<!-- walk",
            "expect: Not passed",
            "exit: 1",
            "stdin: a\\nb\\n",
            "-->",
            "```console",
            "course check 3",
            "```",
            "```text",
            "output, not run",
            "```",
            "<!-- walk",
            "run: mkdir -p cohort",
            "-->",
            "Then grade.",
            "1. A list item:",
            "   ```sh",
            "   course grade cohort/",
            "   ```",
            "<!-- walk skip: needs a GPU -->",
            "```console",
            "nsys profile x",
            "```",
        ])
        steps = parse_page(page, "p.md")
        self.assertEqual([s.commands for s in steps], [
            ["echo one"], ["course check 3"], ["mkdir -p cohort"], ["course grade cohort/"],
            ["nsys profile x"],
        ])
        self.assertEqual(steps[1].exit, 1)
        self.assertEqual(steps[1].expect, ["Not passed"])
        self.assertEqual(steps[1].stdin, "a\nb\n")
        self.assertTrue(steps[2].hidden)
        self.assertEqual(steps[4].skip, "needs a GPU")
        self.assertEqual(steps[1].where(), "p.md:10")

    def test_mistakes_are_named_with_their_line(self):
        for page, says in [
            ("<!-- walk\nexpct: x\n-->\n```console\nls\n```", "p.md:2: 'expct: x' is not"),
            ("<!-- walk exit: 1 -->\n```text\nls\n```", "before a ```text block"),
            ("<!-- walk exit: 1 -->\nSome prose.\n```console\nls\n```", "right before"),
            ("<!-- walk quick: --n 40 => --n 8 -->\n```console\nls\n```", "does not occur"),
            ("<!-- walk exit: one -->\n```console\nls\n```", "exit needs a number"),
            ("<!-- walk\nexit: 1\n", "not closed"),
        ]:
            with self.assertRaises(PageError) as caught:
                parse_page(page, "p.md")
            self.assertIn(says, str(caught.exception))

    def test_a_hidden_step_right_before_a_block_runs_first(self):
        steps = parse_page("<!-- walk\nrun: mkdir cohort\n-->\n\n```console\ncourse grade cohort/\n```", "p.md")
        self.assertEqual([(s.hidden, s.commands) for s in steps],
                         [(True, ["mkdir cohort"]), (False, ["course grade cohort/"])])

    def test_quick_replaces_text(self):
        steps = parse_page("<!-- walk quick: --requests 40 => --requests 4 -->\n"
                           "```console\nbench --requests 40\n```", "p.md")
        self.assertEqual(steps[0].script(), "bench --requests 4")

    def test_run_checks_exit_code_output_and_input_and_stops_servers(self):
        root = Path(tempfile.mkdtemp())
        try:
            env = dict(os.environ)
            ok, _ = run_step(Step("p", 1, ["read a; echo got $a"], expect=["got yes"], stdin="yes\n"), root, env)
            self.assertTrue(ok)
            ok, detail = run_step(Step("p", 1, ["echo hello"], expect=["goodbye"]), root, env)
            self.assertFalse(ok)
            self.assertIn("does not say 'goodbye'", detail)
            ok, detail = run_step(Step("p", 1, ["false", "echo after"]), root, env)
            self.assertFalse(ok)
            self.assertIn("exit code 1", detail)
            ok, _ = run_step(Step("p", 1, ["exit 1"], exit=1), root, env)
            self.assertTrue(ok)
            # A background "server" left running is stopped with its step.
            ok, _ = run_step(Step("p", 1, [f"sleep 60 & echo $! > {root}/pid"]), root, env)
            self.assertTrue(ok)
            pid = int((root / "pid").read_text())
            time.sleep(0.3)
            alive = Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
            self.assertFalse(alive, "the background process outlived its step")
            ok, detail = run_step(Step("p", 1, ["sleep 5"], timeout=1), root, env)
            self.assertFalse(ok)
            self.assertIn("still running after 1 s", detail)
        finally:
            shutil.rmtree(root)

    def test_background_server_runs_until_stopped(self):
        page = "\n".join([
            "<!-- walk",
            "background: server",
            "ready: text listening",
            "-->",
            "```console",
            "echo listening; sleep 60",
            "```",
            "<!-- walk stop: server -->",
            "```console",
            "echo client",
            "```",
        ])
        server, client = parse_page(page, "p.md")
        self.assertEqual((server.background, server.ready), ("server", ("text", "listening")))
        self.assertEqual(client.stop, ["server"])
        root = Path(tempfile.mkdtemp())
        try:
            bg = Background(server, root, dict(os.environ))
            ok, detail = bg.wait_ready(server)
            self.assertTrue(ok, detail)
            self.assertIsNone(bg.proc.poll(), "the server ended before the next step")
            bg.stop()
            self.assertIsNotNone(bg.proc.poll())
            early = Step("p", 1, ["exit 3"], background="s", ready=("port", "9"), timeout=5)
            bg = Background(early, root, dict(os.environ))
            ok, detail = bg.wait_ready(early)
            bg.stop()
            self.assertFalse(ok)
            self.assertIn("ended (exit code 3) before it was ready", detail)
        finally:
            shutil.rmtree(root)
        with self.assertRaises(PageError):
            parse_page("<!-- walk ready: port 80 -->\n```console\nls\n```", "p.md")
        with self.assertRaises(PageError):
            parse_page("<!-- walk\nbackground: s\nready: socket 80\n-->\n```console\nls\n```", "p.md")

    def test_restore_puts_exercises_back_and_removes_new_files(self):
        root = Path(tempfile.mkdtemp())
        try:
            subprocess.run(["git", "init", "-q"], cwd=root, check=True)
            (root / "exercises").mkdir()
            (root / "exercises/answers.toml").write_text("a = 1\n")
            (root / ".gitignore").write_text("results/\n")
            (root / "kept-untracked.txt").write_text("mine")
            with Restore(root):
                (root / "exercises/answers.toml").write_text("a = 2\n")
                (root / "exercises/results").mkdir()
                (root / "grades").mkdir()
                (root / "grades/gradebook.csv").write_text("x")
                (root / "results").mkdir()
            self.assertEqual((root / "exercises/answers.toml").read_text(), "a = 1\n")
            self.assertFalse((root / "exercises/results").exists())
            self.assertFalse((root / "grades").exists())
            self.assertFalse((root / "results").exists())
            self.assertTrue((root / "kept-untracked.txt").exists())
        finally:
            shutil.rmtree(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--list", action="store_true", help="list the steps without running them")
    parser.add_argument("--only", help="comma-separated page file names (e.g. exercise-3.md,README.md)")
    parser.add_argument("--self-test", action="store_true", help="test this script itself")
    args = parser.parse_args()
    if args.self_test:
        result = unittest.main(argv=[sys.argv[0]], exit=False, verbosity=1).result
        return 0 if result.wasSuccessful() else 1
    root = Path(__file__).resolve().parent.parent
    pages = pages_in_order(root)
    if args.only:
        wanted = {p.strip() for p in args.only.split(",") if p.strip()}
        unknown = wanted - {Path(p).name for p in pages}
        if unknown:
            print(f"page-walk: no page named {', '.join(sorted(unknown))} (see --list)", file=sys.stderr)
            return 2
        pages = [p for p in pages if Path(p).name in wanted]
    return walk(root, pages, args.list)


if __name__ == "__main__":
    sys.exit(main())
