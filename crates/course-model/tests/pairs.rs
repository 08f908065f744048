//! Each exercise and its solution are one program: the solution's files differ from the
//! exercise's only in the TODO bodies, so a fix to the program is made once and a learner who
//! diffs the two sees exactly what they were to write.
//!
//! How a TODO is marked (as the exercises have always marked them):
//! - **A TODO body** is the innermost `{ ... }` block around a comment line that starts with
//!   `// TODO` (`// TODO`, `// TODO: ...`, `// TODO (stage 1): ...`): in the exercise a
//!   placeholder (`todo!`, a `bail!`, a NaN), in the solution any body.
//! - **The task paragraph** of a file's header, `//! TODO (you): ...` (or `// TODO (you): ...` in
//!   a CUDA file), up to the next blank comment line: the solution says `//! Solution: ...` there.
//!
//! Not compared: `answers.toml` (the learner's answers are themselves the TODO: the solution's
//! holds the reference's), `README.md` (the page `course run` and `course solution` show each
//! folder by), `Cargo.toml` (the package's name and description; a solution may depend on what
//! its reference answers need), `tests/` (each package's tests of its own program, whose
//! behaviour the TODO bodies change: the exercise's test that it asks for a prediction, the
//! solution's that it records the reference's), and what runs leave (`results/`, `target/`).
//! Unit tests inside `src/` are compared. Every other file of either folder exists in both.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Files whose differences are allowed whole (see the module's doc).
const NOT_COMPARED: [&str; 3] = ["answers.toml", "README.md", "Cargo.toml"];
/// Folders not compared: what runs and builds leave, and each package's own tests.
const NOT_COMPARED_DIRS: [&str; 3] = ["results", "target", "tests"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir`, relative to it, but for the folders not compared.
fn files(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            if NOT_COMPARED_DIRS.contains(&first.as_ref()) || first.starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel);
            }
        }
    }
    out
}

/// The exercise numbers with both an exercise and a solution folder.
fn pairs() -> Vec<u32> {
    let mut numbers: Vec<u32> = std::fs::read_dir(root().join("exercises"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_prefix("exercise-")?.parse().ok()
        })
        .collect();
    numbers.sort();
    numbers
}

/// Byte offsets just past each code brace in `text`, with +1 for `{` and -1 for `}`: braces in
/// comments, strings and character literals are not code.
fn braces(text: &str) -> Vec<(usize, i32)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let end: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                i += 2 + hashes;
                while i < b.len() && !b[i..].starts_with(&end) {
                    i += 1;
                }
                i += end.len();
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'\'' => {
                // A character literal ('{', '\n', '\''); otherwise a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    i += 2;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else if let Some(len) = text[i + 1..].chars().next().map(char::len_utf8) {
                    if b.get(i + 1 + len) == Some(&b'\'') {
                        i += 2 + len;
                    } else {
                        i += 1;
                    }
                } else {
                    i += 1;
                }
            }
            b'{' => {
                out.push((i + 1, 1));
                i += 1;
            }
            b'}' => {
                out.push((i + 1, -1));
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// A file with its task paragraphs replaced by one line each: `//! TODO (you): ...` in an
/// exercise, `//! Solution: ...` in a solution (also with `//`), up to the next blank comment
/// line.
struct Normalized {
    text: String,
    paragraphs: usize,
    /// For each paragraph, its line in `text` (from 1) and how many lines it lost.
    shortened: Vec<(usize, usize)>,
}

impl Normalized {
    fn new(text: &str, opening: &str) -> Normalized {
        let mut out = String::new();
        let mut shortened = Vec::new();
        let mut lines = text.split_inclusive('\n').peekable();
        while let Some(line) = lines.next() {
            let trimmed = line.trim_start();
            let prefix = ["//! ", "// "]
                .into_iter()
                .find(|p| trimmed.starts_with(&format!("{p}{opening}")));
            let Some(prefix) = prefix else {
                out.push_str(line);
                continue;
            };
            let indent = &line[..line.len() - trimmed.len()];
            out.push_str(&format!("{indent}{prefix}<the task>\n"));
            let bare = prefix.trim_end();
            let mut lost = 0;
            while let Some(next) = lines.peek() {
                let t = next.trim();
                if t.starts_with(prefix) && t != bare {
                    lines.next();
                    lost += 1;
                } else {
                    break;
                }
            }
            shortened.push((out.matches('\n').count(), lost));
        }
        Normalized {
            paragraphs: shortened.len(),
            text: out,
            shortened,
        }
    }

    /// The line in the file of byte `at` of `text`.
    fn line_of(&self, at: usize) -> usize {
        let line = self.text[..at].matches('\n').count() + 1;
        line + self
            .shortened
            .iter()
            .filter(|(l, _)| *l < line)
            .map(|(_, lost)| lost)
            .sum::<usize>()
    }
}

/// The exercise's text cut at its TODO bodies: the text before the first body (ending with
/// its `{`), between bodies (each starting with its `}`), and after the last.
fn segments(text: &str) -> Vec<&str> {
    let braces = braces(text);
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if !line.trim_start().starts_with("// TODO") {
            continue;
        }
        // The innermost block open at this line.
        let mut open: Vec<usize> = Vec::new();
        for &(at, d) in braces.iter().take_while(|(at, _)| *at <= start) {
            if d > 0 {
                open.push(at);
            } else {
                open.pop();
            }
        }
        let Some(&from) = open.last() else {
            continue; // a top-level TODO comment, not a body
        };
        let mut depth = 0;
        let to = braces
            .iter()
            .filter(|(at, _)| *at >= from)
            .find_map(|&(at, d)| {
                depth += d;
                (depth == 0).then_some(at - 1)
            })
            .expect("every block closes");
        if cuts.last() != Some(&(from, to)) {
            cuts.push((from, to));
        }
    }
    let mut out = Vec::new();
    let mut at = 0;
    for (from, to) in cuts {
        out.push(&text[at..from]);
        at = to;
    }
    out.push(&text[at..]);
    out
}

/// Where `a` and `b` first differ, as line numbers in each and the two lines.
fn first_difference(a: &str, a_line: usize, b: &str, b_line: usize) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!(
                "exercise line {}: {x:?}\n  solution line {}: {y:?}",
                a_line + i,
                b_line + i
            );
        }
    }
    let (shorter, longer) = (a.lines().count(), b.lines().count());
    format!(
        "one ends first: the exercise's part has {shorter} lines from line {a_line}, the \
         solution's {longer} from line {b_line}"
    )
}

/// Why `solution` is not `exercise` with other TODO bodies, if it is not.
fn differs_outside_todos(exercise: &str, solution: &str) -> Option<String> {
    let ex = Normalized::new(exercise, "TODO (you):");
    let sol = Normalized::new(solution, "Solution:");
    let (tasks, solved) = (ex.paragraphs, sol.paragraphs);
    let (exercise, solution) = (ex.text.as_str(), sol.text.as_str());
    if tasks != solved {
        return Some(format!(
            "{tasks} `TODO (you):` paragraphs in the exercise, {solved} `Solution:` paragraphs in the solution"
        ));
    }
    let parts = segments(exercise);
    let braces = braces(solution);
    let mut at = 0;
    for (i, part) in parts.iter().enumerate() {
        // Where this part starts in the exercise (the parts are slices of it).
        let ex_at = part.as_ptr() as usize - exercise.as_ptr() as usize;
        let rest = &solution[at..];
        let last = i + 1 == parts.len();
        if !(rest.starts_with(part) && (!last || rest.len() == part.len())) {
            return Some(first_difference(
                part,
                ex.line_of(ex_at),
                rest,
                sol.line_of(at),
            ));
        }
        at += part.len();
        if last {
            break;
        }
        // Skip the solution's body: from just past its `{` to its matching `}`.
        let mut depth = 1;
        let Some(end) = braces.iter().filter(|(b, _)| *b > at).find_map(|&(b, d)| {
            depth += d;
            (depth == 0).then_some(b - 1)
        }) else {
            return Some(format!(
                "the solution's block at line {} never closes",
                sol.line_of(at)
            ));
        };
        at = end;
    }
    None
}

#[test]
fn each_solution_differs_from_its_exercise_only_in_the_todo_bodies() {
    let root = root();
    let mut problems = Vec::new();
    let numbers = pairs();
    assert!(numbers.len() >= 8, "found exercises {numbers:?}");
    for n in numbers {
        let exercise = root.join(format!("exercises/exercise-{n}"));
        let solution = root.join(format!("solutions/exercise-{n}"));
        let (a, b) = (files(&exercise), files(&solution));
        for only in a.difference(&b) {
            problems.push(format!(
                "exercise {n}: {} has no counterpart in the solution",
                only.display()
            ));
        }
        for only in b.difference(&a) {
            problems.push(format!(
                "exercise {n}: the solution's {} is not in the exercise",
                only.display()
            ));
        }
        for file in a.intersection(&b) {
            if NOT_COMPARED.iter().any(|f| file == Path::new(f)) {
                continue;
            }
            let read = |dir: &Path| {
                std::fs::read_to_string(dir.join(file))
                    .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
            };
            if let Some(why) = differs_outside_todos(&read(&exercise), &read(&solution)) {
                problems.push(format!(
                    "exercises/exercise-{n}/{f} and solutions/exercise-{n}/{f} differ outside the TODO bodies:\n  {why}",
                    f = file.display()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems (move shared code into the exercise and the solution alike, or mark the \
         learner's part as a TODO body: see crates/course-model/tests/pairs.rs):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_rule_accepts_other_todo_bodies_and_catches_every_other_difference() {
    let exercise = "//! Demo.\n//!\n//! TODO (you): write `f`.\n//! Then run it.\n\nfn f(x: u32) -> u32 {\n    // TODO: double it\n    let _ = x;\n    todo!(\"f: write it {}\")\n}\n\nfn main() {\n    let c = '{';\n    println!(\"{}\", f(2));\n}\n";
    let solution = "//! Demo.\n//!\n//! Solution: `f` written.\n\nfn f(x: u32) -> u32 {\n    if x > 0 { 2 * x } else { 0 }\n}\n\nfn main() {\n    let c = '{';\n    println!(\"{}\", f(2));\n}\n";
    assert_eq!(differs_outside_todos(exercise, solution), None);
    // A change outside the body, a missing paragraph, a changed signature: each is caught.
    let outside = solution.replace("f(2)", "f(3)");
    let why = differs_outside_todos(exercise, &outside).unwrap();
    assert!(
        why.contains("f(3)")
            && why.contains("exercise line 14")
            && why.contains("solution line 11"),
        "{why}"
    );
    let no_paragraph = solution.replace("//! Solution: `f` written.\n", "");
    assert!(differs_outside_todos(exercise, &no_paragraph).is_some());
    let signature = solution.replace("fn f(x: u32) -> u32", "fn f(x: u64) -> u32");
    assert!(differs_outside_todos(exercise, &signature)
        .unwrap()
        .contains("u64"));
    let trailing = format!("{solution}\nfn extra() {{}}\n");
    assert!(differs_outside_todos(exercise, &trailing).is_some());
    // An exercise handed in as its own solution lacks the solution's paragraph.
    assert!(differs_outside_todos(exercise, exercise).is_some());
}
