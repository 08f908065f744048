//! The real `mdbook-measured` binary, as mdBook runs it: `supports RENDERER`, then a
//! `[context, book]` JSON on stdin and the book on stdout; and, when mdBook is installed
//! (target/tools/bin/mdbook or on PATH), `mdbook build` of a tiny book that uses it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mdbook_preprocessor::book::{Book, BookItem, Chapter};
use mdbook_preprocessor::config::Config;
use mdbook_preprocessor::PreprocessorContext;
use measured::{Figure, MeasuredFile, MeasuredOn, Source};

const BIN: &str = env!("CARGO_BIN_EXE_mdbook-measured");

fn serving() -> MeasuredFile {
    let on = MeasuredOn {
        source: Source::BookMeasure,
        date: "2026-12-05".into(),
        machine: "a test machine, 2 threads".into(),
        device: "cpu".into(),
        kernel_path: Some("packed-avx512".into()),
        threads: Some(2),
        ceilings: None,
        command: "book-measure serving".into(),
        note: None,
    };
    let mut file = MeasuredFile::new("serving", on);
    file.insert("b8.p50_ms", Figure::number(41.26, "ms", 1));
    file.insert("speedup", Figure::number(1.489, "×", 2));
    file
}

/// A book root (`book/`) in a temporary folder with the measured file written by the crate's
/// own writer.
fn book_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("book/src")).unwrap();
    measured::write(&root.path().join("book/measured"), &serving()).unwrap();
    root
}

fn run_with_stdin(args: &[&str], cwd: &Path, stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn preprocess(root: &Path, page: &str) -> Output {
    let book_dir = root.join("book");
    std::fs::write(book_dir.join("src/page.md"), page).unwrap();
    let ctx = PreprocessorContext::new(book_dir.clone(), Config::default(), "html".into());
    let mut book = Book::new();
    book.push_item(Chapter::new("Page", page.to_string(), "page.md", vec![]));
    let input = serde_json::to_vec(&(&ctx, &book)).unwrap();
    run_with_stdin(&[], &book_dir, &input)
}

#[test]
fn supports_every_renderer() {
    for renderer in ["html", "markdown"] {
        let status = Command::new(BIN)
            .args(["supports", renderer])
            .status()
            .unwrap();
        assert!(status.success(), "supports {renderer}: {status}");
    }
    let out = Command::new(BIN).arg("--frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn renders_a_book_through_the_json_protocol() {
    let root = book_root();
    let page = "# Page\n\nAt batch 8 the median is {{#measured serving.b8.p50_ms}} \
                ({{#measured serving.speedup}}), against a target of {{#given 50 ms}}.\n\n\
                ```console\n$ echo {{#measured serving.nope}}\n```\n";
    let out = preprocess(root.path(), page);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let book: Book = serde_json::from_slice(&out.stdout).unwrap();
    let BookItem::Chapter(chapter) = &book.items[0] else {
        panic!("not a chapter")
    };
    insta::assert_snapshot!(chapter.content, @r#"
    # Page

    At batch 8 the median is <span class="measured" title="serving.b8.p50_ms">41.3 ms</span> (<span class="measured" title="serving.speedup">1.49×</span>), against a target of <span class="given" title="not a measurement">50 ms</span>.

    ```console
    $ echo {{#measured serving.nope}}
    ```


    <div class="measured-on">

    ---

    <p class="measured-on">Measured on a test machine, 2 threads (cpu, packed-avx512), 2026-12-05, by <code>book-measure serving</code> [serving.json]</p>

    </div>
    "#);
}

#[test]
fn a_missing_key_fails_with_the_page_line_and_command() {
    let root = book_root();
    let out = preprocess(root.path(), "# Page\n\n{{#measured serving.b16.p50_ms}}\n");
    assert_eq!(out.status.code(), Some(1));
    let stderr =
        String::from_utf8_lossy(&out.stderr).replace(&root.path().display().to_string(), "[ROOT]");
    insta::assert_snapshot!(stderr, @"
    mdbook-measured: 1 marker(s) could not be rendered from [ROOT]/book/measured:
    book/src/page.md:3: {{#measured serving.b16.p50_ms}}: [ROOT]/book/measured/serving.json: no figure `b16.p50_ms` (nearest: b8.p50_ms; 2 figures in all). Next step: if the key is right, its experiment does not write it yet: list it in book/measured/wanted/PAGE.tsv (crates/book-measure writes what is listed there), then run `cargo run -p book-measure -- serving` (it writes book/measured/serving.json); if not, fix the key
    ");
    assert!(out.stdout.is_empty());
}

/// target/tools/bin/mdbook (scripts/install-book-tools.sh), else `mdbook` on PATH.
fn mdbook() -> Option<PathBuf> {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/bin/mdbook");
    if tools.is_file() {
        return Some(tools);
    }
    let on_path = Command::new("mdbook").arg("--version").output().ok()?;
    on_path.status.success().then(|| PathBuf::from("mdbook"))
}

#[test]
fn mdbook_build_renders_included_files_and_fails_on_a_missing_key() {
    let Some(mdbook) = mdbook() else {
        eprintln!(
            "SKIPPED mdbook_build_renders_included_files_and_fails_on_a_missing_key: no mdBook \
             (run scripts/install-book-tools.sh, which installs target/tools/bin/mdbook)"
        );
        return;
    };
    let root = book_root();
    let book = root.path().join("book");
    std::fs::write(
        book.join("book.toml"),
        format!(
            "[book]\ntitle = \"t\"\nsrc = \"src\"\n\n[preprocessor.measured]\ncommand = {:?}\n\
             after = [\"links\"]\n",
            BIN
        ),
    )
    .unwrap();
    std::fs::write(
        book.join("src/SUMMARY.md"),
        "# Summary\n\n- [Page](page.md)\n",
    )
    .unwrap();
    std::fs::write(
        book.join("src/page.md"),
        "# Page\n\n{{#include table.md}}\n\nShown as markup: `{{#measured serving.nope}}`.\n",
    )
    .unwrap();
    std::fs::write(
        book.join("src/table.md"),
        "| batch | p50 |\n|---|---|\n| 8 | {{#measured serving.b8.p50_ms}} |\n",
    )
    .unwrap();
    let out = Command::new(&mdbook)
        .arg("build")
        .arg(&book)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(book.join("book/page.html")).unwrap();
    assert!(
        html.contains(
            "<td><span class=\"measured\" title=\"serving.b8.p50_ms\">41.3 ms</span></td>"
        ),
        "the included table's figure is rendered:\n{html}"
    );
    assert!(
        html.contains("<code>{{#measured serving.nope}}</code>"),
        "{html}"
    );
    assert!(
        html.contains("Measured on a test machine, 2 threads"),
        "{html}"
    );

    std::fs::write(
        book.join("src/table.md"),
        "| batch | p50 |\n|---|---|\n| 16 | {{#measured serving.b16.p50_ms}} |\n",
    )
    .unwrap();
    let out = Command::new(&mdbook)
        .arg("build")
        .arg(&book)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a missing key must fail the build:\n{stderr}"
    );
    assert!(
        stderr.contains(
            "book/src/table.md:3 (included by book/src/page.md): \
             {{#measured serving.b16.p50_ms}}: "
        ) && stderr.contains("no figure `b16.p50_ms`"),
        "{stderr}"
    );
}

/// A claim of the book (`gelu-slow-kernel`), through the real binary: the sentence alone where
/// the file agrees, the sentence and what this machine measured where it does not.
#[test]
fn a_book_claim_renders_its_sentence_or_what_was_measured_otherwise() {
    let root = book_root();
    let mut exercise_3 = serving();
    exercise_3.name = "exercise-3".into();
    exercise_3.measured_on.command = "book-measure exercise-3".into();
    exercise_3.figures.clear();
    let page = "{{#claim gelu-slow-kernel}}Its Reading says slow kernel.{{#endclaim}}\n";
    let mut rendered = Vec::new();
    for reading in ["slow kernel", "memory-bound"] {
        exercise_3.insert("gelu.reading", Figure::text(reading));
        measured::write(&root.path().join("book/measured"), &exercise_3).unwrap();
        let out = preprocess(root.path(), page);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let book: Book = serde_json::from_slice(&out.stdout).unwrap();
        let BookItem::Chapter(chapter) = &book.items[0] else {
            panic!("not a chapter")
        };
        rendered.push(chapter.content.lines().next().unwrap().to_string());
        assert!(
            chapter.content.contains("[exercise-3.json]"),
            "{}",
            chapter.content
        );
    }
    insta::assert_snapshot!(rendered.join("\n"), @r#"
    <span class="claim" data-claim="gelu-slow-kernel">Its Reading says slow kernel.</span>
    <span class="claim claim-otherwise" data-claim="gelu-slow-kernel">Its Reading says slow kernel.</span> <em class="measured-otherwise">(This machine measured otherwise: gelu.reading = memory-bound)</em>
    "#);
}

/// book/book.toml registers this preprocessor after `links` (so included files are covered), by
/// a command relative to the book that scripts/install-book-tools.sh provides, reading
/// book/measured.
#[test]
fn the_book_registers_the_preprocessor() {
    let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book");
    let text = std::fs::read_to_string(book.join("book.toml")).unwrap();
    let config: Config = text.parse().unwrap();
    let after: Vec<String> = config.get("preprocessor.measured.after").unwrap().unwrap();
    assert!(after.contains(&"links".to_string()), "{after:?}");
    let command: String = config
        .get("preprocessor.measured.command")
        .unwrap()
        .unwrap();
    assert_eq!(command, "../target/tools/bin/mdbook-measured");
    let install = std::fs::read_to_string(book.join("../scripts/install-book-tools.sh")).unwrap();
    assert!(
        install.contains("cargo build -p mdbook-measured"),
        "install-book-tools builds it"
    );
    let dir: String = config.get("preprocessor.measured.dir").unwrap().unwrap();
    assert_eq!(
        book.join(dir).canonicalize().unwrap(),
        book.join("measured").canonicalize().unwrap()
    );
}
