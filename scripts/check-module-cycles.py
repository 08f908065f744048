#!/usr/bin/env python3
"""Checks that no crate of the workspace has an import cycle between its top-level modules.

A module's edges are the sibling modules its code names: `crate::x`, `crate::{x, y::z}`, and,
in a top-level module's own file, `super::x`. Nested modules count as their top-level module
(`src/serve/routes.rs` is `serve`), and edges to the crate root (lib.rs, main.rs) are left out:
the root declares the modules, so everything may use what it re-exports. A cycle (modules that
reach each other) is printed with one file:line per edge, so the fix is plain: move what both
need into a module of its own, or pass it in.

    scripts/check-module-cycles.py [ROOT]     # every crates/*/src, exercises/*/src, solutions/*/src
    scripts/check-module-cycles.py --self-test

Exit status 1 when a crate has a cycle. Reads the sources only (no cargo): well under a second.
"""
import contextlib
import io
import os
import re
import sys
import tempfile
from pathlib import Path

CRATE_PATH = re.compile(r"\bcrate::(\{|\w+)")
SUPER_PATH = re.compile(r"\bsuper::(\{|\w+)")
COMMENT = re.compile(r"//[^\n]*")


def top_module(src: Path, file: Path) -> str | None:
    """The top-level module `file` belongs to; None for the crate root."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    if not parts or parts == ["lib"] or parts == ["main"] or parts[0] == "bin":
        return None
    return parts[0]


def path_tail(text: str, m: re.Match) -> str:
    """What follows `crate::` at `m`: a name, or a whole `{…}` group, nested groups included."""
    if m.group(1) != "{":
        return m.group(1)
    depth = 0
    for end in range(m.start(1), len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return text[m.start(1) : end + 1]
    return text[m.start(1) :]


def first_names(group: str) -> list[str]:
    """`x` or `{x, y::z, w as v}`: the first path segment of each item."""
    if not group.startswith("{"):
        return [group]
    names, depth, item = [], 0, ""
    for ch in group[1:-1] + ",":
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            m = re.match(r"\s*(\w+)", item)
            if m:
                names.append(m.group(1))
            item = ""
        else:
            item += ch
    return names


def graph(src: Path) -> dict[str, dict[str, str]]:
    """module -> {module it names: "file:line" of the first place it does}."""
    files = sorted(p for p in src.rglob("*.rs"))
    modules = {m for p in files if (m := top_module(src, p))}
    edges: dict[str, dict[str, str]] = {m: {} for m in modules}
    for file in files:
        module = top_module(src, file)
        if module is None:
            continue
        top_level_file = len(file.relative_to(src).parts) == 1 or file.name == "mod.rs" and len(file.relative_to(src).parts) == 2
        text = COMMENT.sub("", file.read_text(encoding="utf-8"))
        patterns = [CRATE_PATH] + ([SUPER_PATH] if top_level_file else [])
        for pattern in patterns:
            for m in pattern.finditer(text):
                for name in first_names(path_tail(text, m)):
                    if name in modules and name != module and name not in edges[module]:
                        line = text.count("\n", 0, m.start()) + 1
                        edges[module][name] = f"{file}:{line}"
    return edges


def cycles(edges: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def check(root: Path) -> int:
    crates = sorted(p for pattern in ("crates/*/src", "exercises/*/src", "solutions/*/src") for p in root.glob(pattern))
    problems = 0
    for src in crates:
        edges = graph(src)
        for component in cycles(edges):
            problems += 1
            print(f"FAIL {src.parent.relative_to(root)}: the modules {', '.join(component)} import each other:")
            for a in component:
                for b, where in sorted(edges[a].items()):
                    if b in component:
                        print(f"       {a} -> {b}  ({os.path.relpath(where, root)})")
    if problems:
        print(f"{problems} import cycle(s): move what both sides need into a module of its own, or pass it in")
        return 1
    print(f"ok   no import cycle between the top-level modules of {len(crates)} crates")
    return 0


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "crates" / "demo" / "src"
        (src / "serve").mkdir(parents=True)
        (src / "lib.rs").write_text("pub mod a; pub mod b; pub mod c; pub mod serve;\nuse crate::a::X;\n")
        (src / "a.rs").write_text("use crate::{b::{Y, Z}, c};\n// crate::serve in a comment is no edge\n")
        (src / "b.rs").write_text("pub struct Y;\nfn f() { super::c::g() }\n")
        (src / "c.rs").write_text("pub fn g() {}\n")
        (src / "serve" / "mod.rs").write_text("mod routes;\n")
        (src / "serve" / "routes.rs").write_text("use super::super::a; use crate::a::X;\n")
        edges = graph(src)
        assert set(edges["a"]) == {"b", "c"}, edges
        assert set(edges["b"]) == {"c"}, edges
        assert set(edges["serve"]) == {"a"}, edges
        assert cycles(edges) == [], cycles(edges)
        (src / "c.rs").write_text("pub fn g() { crate::serve::h() }\n")
        (src / "serve" / "mod.rs").write_text("mod routes;\npub fn h() {}\n")
        (src / "serve" / "routes.rs").write_text("use crate::a;\n")
        assert cycles(graph(src)) == [["a", "b", "c", "serve"]], cycles(graph(src))
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            assert check(Path(tmp)) == 1
        assert "serve -> a  (crates/demo/src/serve/routes.rs:1)" in printed.getvalue(), printed.getvalue()
    print("ok   check-module-cycles self-test")
    return 0


def main() -> int:
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if args and args[0] == "--self-test":
        return self_test()
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    return check(root.resolve())


if __name__ == "__main__":
    sys.exit(main())
