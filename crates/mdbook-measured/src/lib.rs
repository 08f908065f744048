//! The book's mdBook preprocessor: figures from the measured files, never typed into prose.
//!
//! Registered in `book/book.toml` as `[preprocessor.measured]`, after mdBook's `links` (so the
//! files a page includes are covered too). For each chapter it renders, from the measured files
//! in `book/measured/` (or `[preprocessor.measured] dir = "..."`, relative to the book's root):
//!
//! - `{{#measured NAME.KEY}}`: figure KEY of `NAME.json` (`{{#measured exercise-3.gelu.share}}`
//!   renders like `14.2%`); a missing file or figure fails the build, naming the chapter, the
//!   line, the key and the command that makes the file;
//! - `{{#given TEXT}}`: TEXT, marked as not a measurement;
//! - `{{#claim NAME}}A sentence.{{#endclaim}}`: the sentence, followed by "(This machine
//!   measured otherwise: …)" and the figures when claim NAME fails on these files; an unknown
//!   claim fails the build.
//!
//! A chapter that used figures ends with one "Measured on …" line per file it used. Markers in
//! code blocks and inline code are left as written (a page can show the markup). The markup, the
//! file and the claims live in the `measured` crate; this crate speaks mdBook's protocol.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use mdbook_preprocessor::book::{Book, BookItem};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};
use measured::claims::{Claim, CLAIMS};
use measured::markers::{self, MarkerError};
use measured::Measured;

/// The preprocessor's name in `book.toml` (`[preprocessor.measured]`).
pub const NAME: &str = "measured";

/// Where the measured files are, relative to the book's root, unless book.toml says otherwise.
pub const DEFAULT_DIR: &str = "measured";

/// The preprocessor, with the book's claims.
pub struct MeasuredPreprocessor {
    claims: &'static [Claim],
}

impl Default for MeasuredPreprocessor {
    fn default() -> Self {
        MeasuredPreprocessor { claims: CLAIMS }
    }
}

impl MeasuredPreprocessor {
    /// A preprocessor that knows `claims` (tests use their own).
    pub fn with_claims(claims: &'static [Claim]) -> Self {
        MeasuredPreprocessor { claims }
    }
}

/// The folder of measured files for the book at `ctx.root`.
pub fn measured_dir(ctx: &PreprocessorContext) -> anyhow::Result<PathBuf> {
    let configured: Option<String> = ctx
        .config
        .get(&format!("preprocessor.{NAME}.dir"))
        .with_context(|| format!("book.toml: [preprocessor.{NAME}] dir must be a string"))?;
    Ok(ctx.root.join(configured.as_deref().unwrap_or(DEFAULT_DIR)))
}

/// One chapter's text with its markers rendered and, when it used figures, its "Measured on"
/// lines appended.
pub fn render_chapter(
    content: &str,
    measured: &Measured,
    claims: &[Claim],
) -> Result<String, Vec<MarkerError>> {
    let rendered = markers::render(content, measured, claims)?;
    let files = rendered
        .files
        .iter()
        .filter_map(|name| measured.file(name).ok());
    let mut text = rendered.text;
    text.push_str(&markers::footer(files));
    Ok(text)
}

/// Where a marker error is, said as `book/src/page.md:LINE`: the line in the chapter's own file
/// when the marker is there, else in a file the chapter includes (`{{#include table.md}}`, one
/// level deep), else the line in the chapter as mdBook expanded it.
fn locate(root: &Path, src_dir: &Path, source_path: Option<&Path>, error: &MarkerError) -> String {
    let shown_root = root.parent().unwrap_or(root);
    let show = |p: &Path| {
        p.strip_prefix(shown_root)
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let Some(source_path) = source_path else {
        return format!("(a chapter with no file), line {}", error.line);
    };
    let file = src_dir.join(source_path);
    let on_disk = std::fs::read_to_string(&file).unwrap_or_default();
    if let Some(line) = markers::line_in_source(&on_disk, &error.marker, error.line) {
        return format!("{}:{line}", show(&file));
    }
    let chapter_dir = file.parent().unwrap_or(src_dir);
    for included in includes(&on_disk) {
        let path = chapter_dir.join(included);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if let Some(line) = markers::line_in_source(&text, &error.marker, 0) {
            return format!("{}:{line} (included by {})", show(&path), show(&file));
        }
    }
    format!(
        "{} (line {} once its {{{{#include}}}}s are expanded: the marker is in an included file)",
        show(&file),
        error.line
    )
}

/// The files a chapter includes: the paths of its `{{#include PATH}}` and
/// `{{#include PATH:ANCHOR}}` directives.
fn includes(source: &str) -> Vec<&str> {
    source
        .split("{{#include")
        .skip(1)
        .filter_map(|rest| rest.split("}}").next())
        .filter_map(|args| args.split_whitespace().next())
        .map(|path| path.split(':').next().unwrap_or(path))
        .collect()
}

impl Preprocessor for MeasuredPreprocessor {
    fn name(&self) -> &str {
        NAME
    }

    fn run(&self, ctx: &PreprocessorContext, mut book: Book) -> anyhow::Result<Book> {
        let dir = measured_dir(ctx)?;
        let measured = Measured::load_dir(&dir).map_err(|e| anyhow::anyhow!("{e}"))?;
        let src_dir = ctx.root.join(&ctx.config.book.src);
        let mut problems = Vec::new();
        book.for_each_mut(|item| {
            let BookItem::Chapter(chapter) = item else {
                return;
            };
            match render_chapter(&chapter.content, &measured, self.claims) {
                Ok(text) => chapter.content = text,
                Err(errors) => {
                    for error in errors {
                        let at =
                            locate(&ctx.root, &src_dir, chapter.source_path.as_deref(), &error);
                        problems.push(format!("{at}: {}: {}", error.marker, error.message));
                    }
                }
            }
        });
        if !problems.is_empty() {
            bail!(
                "{} marker(s) could not be rendered from {}:\n{}",
                problems.len(),
                dir.display(),
                problems.join("\n")
            );
        }
        Ok(book)
    }

    fn supports_renderer(&self, _renderer: &str) -> anyhow::Result<bool> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdbook_preprocessor::book::Chapter;
    use mdbook_preprocessor::config::Config;
    use measured::claims::Outcome;
    use measured::{Figure, MeasuredFile, MeasuredOn, Source};

    /// The tests' own claim: the gelu share stays under a fifth of the step.
    static CLAIMS: &[Claim] = &[Claim {
        name: "gelu-is-a-minor-share",
        reads: &["exercise-3.gelu.share"],
        holds_when: "exercise-3.gelu.share < 20",
        check: |r| {
            let share = r.number("exercise-3.gelu.share")?;
            Ok(Outcome::holds_if(share < 20.0, || {
                format!(
                    "gelu took {} of the step",
                    r.render("exercise-3.gelu.share").unwrap()
                )
            }))
        },
    }];

    fn exercise_3(share: f64) -> MeasuredFile {
        let on = MeasuredOn {
            source: Source::BookMeasure,
            date: "2026-12-05".into(),
            machine: "a test machine, 2 threads".into(),
            device: "cpu".into(),
            kernel_path: Some("packed-avx512".into()),
            threads: Some(2),
            ceilings: None,
            command: "book-measure exercise-3".into(),
            note: None,
        };
        let mut file = MeasuredFile::new("exercise-3", on);
        file.insert("gelu.share", Figure::number(share, "%", 1));
        file
    }

    /// A book root in a temporary folder: `src/page.md` holding `page`, the measured files in
    /// `dir` (relative to the root).
    fn book(
        page: &str,
        files: &[MeasuredFile],
        dir: Option<&str>,
    ) -> (tempfile::TempDir, PreprocessorContext, Book) {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("book/src")).unwrap();
        std::fs::write(root.path().join("book/src/page.md"), page).unwrap();
        let measured = root.path().join("book").join(dir.unwrap_or(DEFAULT_DIR));
        for file in files {
            measured::write(&measured, file).unwrap();
        }
        let mut config = Config::default();
        if let Some(dir) = dir {
            config.set("preprocessor.measured.dir", dir).unwrap();
        }
        let ctx = PreprocessorContext::new(root.path().join("book"), config, "html".into());
        let mut book = Book::new();
        book.push_item(Chapter::new("Page", page.to_string(), "page.md", vec![]));
        (root, ctx, book)
    }

    fn content(book: &Book) -> String {
        match &book.items[0] {
            BookItem::Chapter(c) => c.content.clone(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_chapter_renders_and_ends_with_where_its_figures_were_measured() {
        let page =
            "# Page\n\nGELU takes {{#measured exercise-3.gelu.share}} against {{#given 6 ms}}.\n\n\
                    {{#claim gelu-is-a-minor-share}}GELU is a minor share.{{#endclaim}}\n\n\
                    ```text\n{{#measured exercise-3.gelu.share}} in code\n```\n";
        let (_root, ctx, book) = book(page, &[exercise_3(14.23)], None);
        let out = MeasuredPreprocessor::with_claims(CLAIMS)
            .run(&ctx, book)
            .unwrap();
        insta::assert_snapshot!(content(&out), @r#"
        # Page

        GELU takes <span class="measured" title="exercise-3.gelu.share">14.2%</span> against <span class="given" title="not a measurement">6 ms</span>.

        <span class="claim" data-claim="gelu-is-a-minor-share">GELU is a minor share.</span>

        ```text
        {{#measured exercise-3.gelu.share}} in code
        ```


        <div class="measured-on">

        ---

        <p class="measured-on">Measured on a test machine, 2 threads (cpu, packed-avx512), 2026-12-05, by <code>book-measure exercise-3</code> [exercise-3.json]</p>

        </div>
        "#);
    }

    #[test]
    fn a_failing_claim_shows_what_this_machine_measured() {
        let page = "{{#claim gelu-is-a-minor-share}}GELU is a minor share.{{#endclaim}}\n";
        let (_root, ctx, book) = book(page, &[exercise_3(31.0)], Some("elsewhere"));
        let out = MeasuredPreprocessor::with_claims(CLAIMS)
            .run(&ctx, book)
            .unwrap();
        let text = content(&out);
        assert!(
            text.starts_with(
                "<span class=\"claim claim-otherwise\" data-claim=\"gelu-is-a-minor-share\">GELU \
                 is a minor share.</span> <em class=\"measured-otherwise\">(This machine measured \
                 otherwise: gelu took 31.0% of the step)</em>\n"
            ),
            "{text}"
        );
        assert!(text.contains("Measured on a test machine"), "{text}");
    }

    #[test]
    fn a_page_without_markers_is_left_as_it_was() {
        let page = "# Page\n\nNo figures `{{#measured x.y}}`.\n";
        let (_root, ctx, book) = book(page, &[], None);
        let out = MeasuredPreprocessor::with_claims(CLAIMS)
            .run(&ctx, book)
            .unwrap();
        assert_eq!(content(&out), page);
    }

    #[test]
    fn errors_name_the_chapter_line_key_and_command() {
        let page =
            "# Page\n\n{{#measured exercise-3.gelu.shar}}\n{{#measured exercise-5.step_ms}}\n\
                    {{#claim no-such-claim}}x{{#endclaim}}\n";
        let (root, ctx, book) = book(page, &[exercise_3(14.23)], None);
        let err = MeasuredPreprocessor::with_claims(CLAIMS)
            .run(&ctx, book)
            .unwrap_err();
        let text = err
            .to_string()
            .replace(&root.path().display().to_string(), "[ROOT]");
        insta::assert_snapshot!(text, @"
        3 marker(s) could not be rendered from [ROOT]/book/measured:
        book/src/page.md:3: {{#measured exercise-3.gelu.shar}}: [ROOT]/book/measured/exercise-3.json: no figure `gelu.shar` (nearest: gelu.share). Next step: if the key is right, its experiment does not write it yet: list it in book/measured/wanted/PAGE.tsv (crates/book-measure writes what is listed there), then run `cargo run -p book-measure -- exercise-3` (it writes book/measured/exercise-3.json); if not, fix the key
        book/src/page.md:4: {{#measured exercise-5.step_ms}}: [ROOT]/book/measured/exercise-5.json: no such file, so `exercise-5.*` figures cannot be rendered. Next step: run `cargo run -p book-measure -- exercise-5` (it writes book/measured/exercise-5.json)
        book/src/page.md:5: {{#claim no-such-claim}}: no claim called `no-such-claim` (known: gelu-is-a-minor-share). Next step: spell it as in crates/measured/src/claims.rs, or add it there and to book/measured/wanted/PAGE.tsv; if it is there, this program is older: rebuild it (scripts/install-book-tools.sh rebuilds the book's preprocessor)
        ");
    }

    #[test]
    fn a_marker_from_an_included_file_names_that_file() {
        let (root, ctx, mut book) = book("# Page\n\n{{#include parts/table.md:rows}}\n", &[], None);
        std::fs::create_dir(root.path().join("book/src/parts")).unwrap();
        std::fs::write(
            root.path().join("book/src/parts/table.md"),
            "a\n{{#measured exercise-3.x}}\n",
        )
        .unwrap();
        if let BookItem::Chapter(c) = &mut book.items[0] {
            c.content = "# Page\n\na\n{{#measured exercise-3.x}}\n".into();
        }
        let err = MeasuredPreprocessor::with_claims(CLAIMS)
            .run(&ctx, book)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(
                "\nbook/src/parts/table.md:2 (included by book/src/page.md): \
                 {{#measured exercise-3.x}}: "
            ),
            "{text}"
        );
    }

    #[test]
    fn a_marker_from_an_unreadable_include_says_so() {
        let (root, ctx, mut book) = book("# Page\n\n{{#include gone.md}}\n", &[], None);
        if let BookItem::Chapter(c) = &mut book.items[0] {
            c.content = "# Page\n\n{{#measured exercise-3.x}}\n".into();
        }
        let err = MeasuredPreprocessor::with_claims(CLAIMS)
            .run(&ctx, book)
            .unwrap_err();
        let text = err
            .to_string()
            .replace(&root.path().display().to_string(), "[ROOT]");
        assert!(
            text.contains(
                "book/src/page.md (line 3 once its {{#include}}s are expanded: the marker is in \
                 an included file): {{#measured exercise-3.x}}: "
            ),
            "{text}"
        );
    }
}
