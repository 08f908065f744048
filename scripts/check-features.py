#!/usr/bin/env python3
"""Checks that every package's build compiles its dependencies exactly as the workspace's does.

Cargo resolves features from the packages a command names, so `cargo build -p exercise-3` could
give a shared crate (serde, smallvec, zip...) fewer features than `cargo build --workspace`, or
`cargo build -p exercise-5`, and compile it, and everything above it (candle), a second time.
crates/workspace-hack lists such crates with the workspace's features. This script asks Cargo
for each build's unit graph (no compiling: `--unit-graph`, a nightly flag that RUSTC_BOOTSTRAP=1
allows on stable) and compares:

  1. features: for each member M, in `cargo build -p M` and `cargo test -p M`, every third-party
     crate outside the HTTP stack has the features the workspace build gives it, separately for
     target code and for build scripts and proc-macros (the host). A difference prints the line
     for crates/workspace-hack/Cargo.toml;
  2. reuse: every third-party crate those builds compile (a unit: package, features, profile
     settings and, recursively, its dependencies, what Cargo's metadata hash covers) is one the
     workspace build compiles too, so CI's one build serves every package; and
     `cargo build -p exercise-3` after `cargo build -p exercise-5` compiles no crate again: only
     exercise-3 and what only it uses (the issue's proof);
  3. the HTTP stack stays out of exercise-3's graph (gpt2's `serve` feature is off there), and so
     does candle-transformers (exercise 8's second tier).

    scripts/check-features.py [--target TRIPLE] [--help]

--target checks the graphs of another platform (aarch64-apple-darwin: a Mac), whose
platform-specific crates (rustix, windows-sys...) may differ; its fixes go under
[target.'cfg(...)'.dependencies] in the hack. Only Cargo's resolution runs: no toolchain for
that target is needed.
Exit status 1 when a check fails. Takes about 10 seconds (Cargo resolves ~40 graphs)."""
import hashlib
import json
import os
import subprocess
import sys
from collections import defaultdict

# Crates only the HTTP server and client use. The hack leaves them out (else every exercise would
# build them); their features, and so the crates built on them, may differ between the packages
# that have them (bench, course, gpt2 with `serve`, exercise 7), none of which is in candle's graph.
HTTP_STACK = {"tokio", "hyper", "hyper-util", "mio", "tower", "tokio-util", "sync_wrapper", "axum", "axum-core", "reqwest", "h2"}
HACK = "crates/workspace-hack/Cargo.toml"


TARGET = []  # ["--target", TRIPLE] when --target is given


def unit_graph(*args):
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    out = subprocess.run(["cargo", *args, *TARGET, "-q", "--unit-graph", "-Z", "unstable-options"], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"check-features: `cargo {' '.join(args)} --unit-graph` failed:\n{out.stderr}")
    return json.loads(out.stdout)["units"]


def is_host_root(unit):
    kind = unit["target"]["kind"]
    return "proc-macro" in kind or "custom-build" in kind


def features_by_side(units):
    """{(name@version, "target"|"host"): {features...}} for third-party library units. A unit that
    both sides share (same features and profile) counts for both."""
    host, target = set(), set()

    def mark(i, seen):
        if i in seen:
            return
        seen.add(i)
        for dep in units[i]["dependencies"]:
            j = dep["index"]
            mark(j, host if seen is target and is_host_root(units[j]) else seen)

    for i, unit in enumerate(units):
        if unit["pkg_id"].startswith("path+") and not is_host_root(unit):
            mark(i, target)
    out = defaultdict(set)
    for i, unit in enumerate(units):
        if unit["pkg_id"].startswith("path+") or unit["mode"] == "run-custom-build" or "custom-build" in unit["target"]["kind"]:
            continue
        for side, seen in (("host", host), ("target", target)):
            if i in seen:
                out[(unit["pkg_id"].split("#")[-1], side)].add(tuple(sorted(unit["features"])))
    return out


def identities(units):
    """{identity: unit}; the identity covers what Cargo's metadata hash covers: package, target,
    profile settings (not the profile's name), mode, features and the dependencies' identities."""
    memo = {}

    def ident(i):
        if i not in memo:
            unit = units[i]
            profile = {k: v for k, v in unit["profile"].items() if k != "name"}
            deps = sorted(ident(d["index"]) for d in unit["dependencies"])
            key = [unit["pkg_id"], unit["target"]["kind"], unit["target"]["name"], profile, unit["mode"], sorted(unit["features"]), unit.get("platform"), deps]
            memo[i] = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()
        return memo[i]

    return {ident(i): units[i] for i in range(len(units))}


def name(unit):
    """name@version, or a workspace member's name."""
    source, _, fragment = unit["pkg_id"].partition("#")
    if source.startswith("path+"):
        return fragment.split("@")[0] if "@" in fragment else source.rstrip("/").rsplit("/", 1)[-1]
    return fragment


def compiled_after(first, then):
    """The units `then` compiles when `first` was built before it: their names."""
    seen = identities(first)
    return sorted({name(u) for h, u in identities(then).items() if h not in seen and u["mode"] != "run-custom-build"})


def on_http_stack(units):
    """Names of the crates in the HTTP stack or built on it (tokio-rustls, tower-http...)."""
    memo = {}

    def uses(i):
        if i not in memo:
            memo[i] = False
            memo[i] = name(units[i]).split("@")[0] in HTTP_STACK or any(uses(d["index"]) for d in units[i]["dependencies"])
        return memo[i]

    return {name(units[i]) for i in range(len(units)) if uses(i)}


def hack_line(name_version, features):
    name, version = name_version.split("@")
    feats = sorted(features)
    default = "" if "default" in feats else "default-features = false, "
    listed = ", ".join(f'"{f}"' for f in feats if f != "default")
    return f'{name} = {{ version = "{version}", {default}features = [{listed}] }}'


def main():
    args = sys.argv[1:]
    if args[:1] == ["--target"] and len(args) == 2:
        TARGET.extend(args)
    elif args:
        print(__doc__)
        sys.exit(0 if args[0] in ("-h", "--help") else 2)
    platform = f" for {TARGET[1]}" if TARGET else ""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    meta = json.loads(subprocess.run(["cargo", "metadata", "-q", "--no-deps", "--format-version", "1"], capture_output=True, text=True, check=True).stdout)
    members = sorted(p["name"] for p in meta["packages"] if p["name"] != "workspace-hack")
    failed = 0

    workspace = unit_graph("build", "--workspace", "--all-targets")
    w = features_by_side(workspace)
    differ, extra = defaultdict(list), defaultdict(list)
    for member in members:
        for command in ("build", "test"):
            units = unit_graph(command, "-p", member)
            for key, feats in features_by_side(units).items():
                if key[0].split("@")[0] not in HTTP_STACK and feats != w.get(key):
                    differ[key].append(f"cargo {command} -p {member}")
            http = on_http_stack(units)
            for crate in compiled_after(workspace, units):
                if "@" in crate and crate not in http:
                    extra[crate].append(f"cargo {command} -p {member}")
    for (crate, side), where in sorted(differ.items()):
        failed += 1
        section = "[build-dependencies]" if side == "host" else f"[target.'cfg(...)'.dependencies] (the cfg of {TARGET[1]})" if TARGET else "[dependencies]"
        print(f"FAIL{platform} features of {crate} ({side}) in {', '.join(where[:3])}{' ...' if len(where) > 3 else ''} differ from the workspace's:")
        for feats in sorted(w.get((crate, side), [()])):
            print(f"     add to {HACK} {section}: {hack_line(crate, feats)}")
    if not differ:
        print(f"ok{platform}   every member's build and test graph gives each shared crate the workspace's features ({len(members)} members)")
    for crate, where in sorted(extra.items()):
        failed += 1
        print(f"FAIL{platform} {crate} in {', '.join(where[:3])}{' ...' if len(where) > 3 else ''} is compiled apart from the workspace build's (profile or dependencies differ)")
    if not extra:
        print(f"ok{platform}   every third-party crate a member's build compiles is one the workspace build compiles too")

    # A crate exercise-5 also builds must not be compiled again; what only exercise-3 uses (its
    # prediction's answers-file and toml_edit) is compiled once, for it.
    ex3, ex5 = unit_graph("build", "-p", "exercise-3"), unit_graph("build", "-p", "exercise-5")
    new = compiled_after(ex5, ex3)
    in_ex5 = {name(u) for u in ex5}
    again = [crate for crate in new if crate in in_ex5]
    own = [crate for crate in new if crate not in in_ex5 and crate != "exercise-3"]
    if again or "exercise-3" not in new:
        failed += 1
        print(f"FAIL{platform} cargo build -p exercise-3 after cargo build -p exercise-5 would compile again {', '.join(again) or '(nothing: exercise-3 itself missing)'}")
    else:
        print(f"ok{platform}   cargo build -p exercise-3 after cargo build -p exercise-5 compiles only exercise-3{' and what only it uses: ' + ', '.join(own) if own else ''}")

    http = sorted({name(u) for u in ex3 if name(u).split("@")[0] in HTTP_STACK})
    if http:
        failed += 1
        print(f"FAIL{platform} exercise-3's graph has the HTTP stack: {', '.join(http)}")
    else:
        print(f"ok{platform}   exercise-3 builds without the HTTP stack (no tokio, hyper, axum)")

    # Exercise 8's second tier runs candle-transformers' models: a learner's first build leaves
    # them out.
    second_tier = sorted({name(u) for u in ex3 if name(u).split("@")[0] in ("candle-transformers", "traced-models")})
    if second_tier:
        failed += 1
        print(f"FAIL{platform} exercise-3's graph has exercise 8's second tier: {', '.join(second_tier)}")
    else:
        print(f"ok{platform}   exercise-3 builds without candle-transformers (exercise 8's second tier)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
