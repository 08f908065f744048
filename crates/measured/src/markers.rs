//! The page markup for figures, and its rendering.
//!
//! - `{{#measured NAME.KEY}}` renders figure `KEY` of `book/measured/NAME.json` (`14.2%`);
//! - `{{#given TEXT}}` renders TEXT, marked as not a measurement (a hardware specification, a
//!   threshold, the article's invented table);
//! - `{{#claim NAME}}A sentence.{{#endclaim}}` renders the sentence; when claim NAME fails on the
//!   loaded files, the sentence is followed by "(This machine measured otherwise: …)".
//!
//! Markers inside code (fenced blocks, at any indentation, and inline code spans) are left alone,
//! so a page can show the markup itself (a backslash, `\{{#measured ...}}`, does not: mdBook's
//! `links` preprocessor, which runs first, removes it). Indented (four-space) code blocks are not recognised as
//! code: use a fence there. Other `{{#...}}` directives (mdBook's own, `{{#quiz}}`) pass through.
//! A claim's sentence stays within one paragraph (no blank line) and claims do not nest.
//!
//! [`render`] renders one page's text; [`footer`] is the "Measured on" lines a page that used
//! figures ends with; [`check_pages`] scans the book's sources (`book-measure --check`).

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::claims::{find, Claim, Outcome};
use crate::error::MeasuredError;
use crate::file::MeasuredFile;
use crate::set::{split_key, Measured};

/// One marker found in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker<'a> {
    Measured(&'a str),
    Given(&'a str),
    Claim(&'a str),
    EndClaim,
}

/// A marker and where it is: byte range in the text, 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<'a> {
    pub marker: Marker<'a>,
    pub range: Range<usize>,
    pub line: usize,
}

/// A problem with one marker of a page; `line` is 1-based in the text given to [`render`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerError {
    pub line: usize,
    /// The marker as written (`{{#measured exercise-3.gelu.shar}}`), for finding it in a source.
    pub marker: String,
    pub message: String,
}

impl fmt::Display for MarkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.marker, self.message)
    }
}

/// A claim met while rendering, and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimResult {
    pub name: String,
    pub line: usize,
    /// The sentence as written in the page, whitespace collapsed.
    pub sentence: String,
    pub outcome: Outcome,
}

/// A page's text with its markers rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// The measured files the page's figures and claims read.
    pub files: BTreeSet<String>,
    pub measured: usize,
    pub claims: Vec<ClaimResult>,
}

/// The byte ranges of `src` that are code: fenced blocks (``` or ~~~, at any indentation) and
/// inline code spans.
pub fn code_ranges(src: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    // (fence character, fence length, byte offset of the opening line)
    let mut fence: Option<(u8, usize, usize)> = None;
    let mut text_start = 0;
    let mut pos = 0;
    for line in src.split_inclusive('\n') {
        let trimmed = line.trim_start_matches([' ', '\t']);
        let bytes = trimmed.as_bytes();
        let run = |c: u8| bytes.iter().take_while(|&&b| b == c).count();
        match fence {
            None => {
                if let Some(&c @ (b'`' | b'~')) = bytes.first() {
                    let n = run(c);
                    // A backtick fence's info string has no backtick (else it is inline code).
                    if n >= 3 && !(c == b'`' && trimmed[n..].contains('`')) {
                        inline_code(src, text_start..pos, &mut ranges);
                        fence = Some((c, n, pos));
                    }
                }
            }
            Some((c, n, start)) => {
                let m = run(c);
                if m >= n && trimmed[m..].trim().is_empty() {
                    ranges.push(start..pos + line.len());
                    fence = None;
                    text_start = pos + line.len();
                }
            }
        }
        pos += line.len();
    }
    match fence {
        Some((_, _, start)) => ranges.push(start..src.len()),
        None => inline_code(src, text_start..src.len(), &mut ranges),
    }
    ranges.sort_by_key(|r| r.start);
    ranges
}

/// Adds the inline code spans of `src[within]`: a run of N backticks up to the next run of
/// exactly N in the same paragraph (else the run is a literal backtick).
fn inline_code(src: &str, within: Range<usize>, ranges: &mut Vec<Range<usize>>) {
    let bytes = &src.as_bytes()[..within.end];
    let mut i = within.start;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let open = i;
        while i < bytes.len() && bytes[i] == b'`' {
            i += 1;
        }
        let n = i - open;
        let mut j = i;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'\n' && blank_line_follows(&bytes[j + 1..]) {
                break; // a code span ends with its paragraph
            }
            if bytes[j] == b'`' {
                let run_start = j;
                while j < bytes.len() && bytes[j] == b'`' {
                    j += 1;
                }
                if j - run_start == n {
                    close = Some(j);
                    break;
                }
            } else {
                j += 1;
            }
        }
        if let Some(end) = close {
            ranges.push(open..end);
            i = end;
        }
    }
}

/// Whether `rest` (what follows a line break) starts with a blank line.
fn blank_line_follows(rest: &[u8]) -> bool {
    let line_end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    rest[..line_end].iter().all(|b| b.is_ascii_whitespace())
}

fn line_of(src: &str, offset: usize) -> usize {
    src[..offset].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Every marker of `src` outside code, in order; malformed ones as errors.
pub fn scan(src: &str) -> (Vec<Found<'_>>, Vec<MarkerError>) {
    let code = code_ranges(src);
    let in_code = |i: usize| code.iter().any(|r| r.contains(&i));
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let mut from = 0;
    while let Some(rel) = src[from..].find("{{") {
        let start = from + rel;
        from = start + 2;
        if in_code(start) {
            continue;
        }
        let after = src[start + 2..].trim_start();
        let Some(directive) = after.strip_prefix('#') else {
            continue;
        };
        let word_len = directive
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(directive.len());
        let word = &directive[..word_len];
        if !matches!(word, "measured" | "given" | "claim" | "endclaim") {
            continue;
        }
        let word_start = src.len() - directive.len();
        let args_start = word_start + word_len;
        let line = line_of(src, start);
        let Some(close_rel) = src[args_start..].find("}}") else {
            errors.push(MarkerError {
                line,
                marker: src[start..args_start].to_string(),
                message: "this marker is not closed with `}}`".into(),
            });
            break;
        };
        let end = args_start + close_rel + 2;
        from = end;
        let raw_args = &src[args_start..args_start + close_rel];
        let args = raw_args.trim();
        let marker_text = &src[start..end];
        let error = |message: String| MarkerError {
            line,
            marker: marker_text.into(),
            message,
        };
        if !raw_args.is_empty() && !raw_args.starts_with(char::is_whitespace) {
            errors.push(error(format!(
                "write a space between `#{word}` and what follows"
            )));
            continue;
        }
        let marker = match word {
            "measured" => {
                if args.is_empty() || args.contains(char::is_whitespace) {
                    errors.push(error(
                        "write one figure's name: `{{#measured NAME.KEY}}`, e.g. \
                         `{{#measured exercise-3.gelu.share}}`"
                            .into(),
                    ));
                    continue;
                }
                Marker::Measured(args)
            }
            "given" => {
                if args.is_empty() {
                    errors.push(error("write the text: `{{#given 3.35 TB/s}}`".into()));
                    continue;
                }
                Marker::Given(args)
            }
            "claim" => {
                if !crate::is_valid_name(args) {
                    errors.push(error(
                        "write the claim's kebab-case name: `{{#claim NAME}}…{{#endclaim}}`".into(),
                    ));
                    continue;
                }
                Marker::Claim(args)
            }
            _ => {
                if !args.is_empty() {
                    errors.push(error("`{{#endclaim}}` takes nothing".into()));
                    continue;
                }
                Marker::EndClaim
            }
        };
        found.push(Found {
            marker,
            range: start..end,
            line,
        });
    }
    (found, errors)
}

/// Escapes text for HTML (a text figure, an attribute).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the markers of one page's text against `measured` and `claims`
/// ([`crate::claims::CLAIMS`] in the book). Errors: every marker that cannot be rendered (a
/// missing file or key, an unknown claim, malformed markup), each with its line.
pub fn render(
    src: &str,
    measured: &Measured,
    claims: &[Claim],
) -> Result<Rendered, Vec<MarkerError>> {
    let (found, mut errors) = scan(src);
    let mut out = String::with_capacity(src.len() + 256);
    let mut files = BTreeSet::new();
    let mut results = Vec::new();
    let mut count = 0;
    // The open claim: its marker, and where its sentence starts in `out` and in `src`.
    let mut open: Option<(&Found, usize, usize)> = None;
    let mut copied = 0;
    for f in &found {
        out.push_str(&src[copied..f.range.start]);
        copied = f.range.end;
        let marker_text = &src[f.range.clone()];
        let error = |message: String| MarkerError {
            line: f.line,
            marker: marker_text.to_string(),
            message,
        };
        match &f.marker {
            Marker::Measured(key) => match measured.lookup(key) {
                Ok(found) => {
                    count += 1;
                    files.insert(found.file.name.clone());
                    out.push_str(&format!(
                        "<span class=\"measured\" title=\"{}\">{}</span>",
                        escape(key),
                        escape(&found.figure.render())
                    ));
                }
                Err(e) => {
                    errors.push(error(e.to_string()));
                    out.push_str(marker_text);
                }
            },
            Marker::Given(text) => {
                out.push_str(&format!(
                    "<span class=\"given\" title=\"not a measurement\">{text}</span>"
                ));
            }
            Marker::Claim(_) => {
                if let Some((outer, ..)) = open {
                    errors.push(error(format!(
                        "a claim inside the claim opened on line {}: close that one with \
                         `{{{{#endclaim}}}}` first (claims do not nest)",
                        outer.line
                    )));
                } else {
                    open = Some((f, out.len(), f.range.end));
                }
            }
            Marker::EndClaim => {
                let Some((opening, out_start, src_start)) = open.take() else {
                    errors.push(error(
                        "`{{#endclaim}}` without a `{{#claim NAME}}` before it".into(),
                    ));
                    continue;
                };
                let Marker::Claim(name) = opening.marker else {
                    unreachable!()
                };
                let opening_error = |message: String| MarkerError {
                    line: opening.line,
                    marker: src[opening.range.clone()].to_string(),
                    message,
                };
                let source_sentence = &src[src_start..f.range.start];
                if source_sentence.lines().skip(1).any(|l| l.trim().is_empty()) {
                    errors.push(opening_error(format!(
                        "the claim's sentence runs past a blank line (it ends on line {}): \
                         keep it within one paragraph",
                        f.line
                    )));
                    continue;
                }
                let Some(claim) = find(claims, name) else {
                    let known: Vec<_> = claims.iter().map(|c| c.name).collect();
                    errors.push(opening_error(format!(
                        "no claim called `{name}` (known: {}). Next step: spell it as in \
                         crates/measured/src/claims.rs, or add it there and to \
                         book/measured/wanted/PAGE.tsv; if it is there, this program is older: \
                         rebuild it (scripts/install-book-tools.sh rebuilds the book's \
                         preprocessor)",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    )));
                    continue;
                };
                let outcome = match claim.evaluate(measured) {
                    Ok(outcome) => outcome,
                    Err(e) => {
                        errors.push(opening_error(e.to_string()));
                        continue;
                    }
                };
                files.extend(claim.files().into_iter().map(String::from));
                let sentence = out.split_off(out_start);
                match &outcome {
                    Outcome::Holds => out.push_str(&format!(
                        "<span class=\"claim\" data-claim=\"{name}\">{sentence}</span>"
                    )),
                    Outcome::Otherwise(details) => out.push_str(&format!(
                        "<span class=\"claim claim-otherwise\" data-claim=\"{name}\">{sentence}\
                         </span> <em class=\"measured-otherwise\">(This machine measured \
                         otherwise: {})</em>",
                        escape(details.trim_end_matches('.'))
                    )),
                }
                results.push(ClaimResult {
                    name: name.to_string(),
                    line: opening.line,
                    sentence: collapse(&strip_markers(source_sentence)),
                    outcome,
                });
            }
        }
    }
    out.push_str(&src[copied..]);
    if let Some((opening, ..)) = open {
        errors.push(MarkerError {
            line: opening.line,
            marker: src[opening.range.clone()].to_string(),
            message: "this claim is never closed with `{{#endclaim}}`".into(),
        });
    }
    if errors.is_empty() {
        Ok(Rendered {
            text: out,
            files,
            measured: count,
            claims: results,
        })
    } else {
        errors.sort_by_key(|e| e.line);
        Err(errors)
    }
}

/// A claim's sentence for a report: its markers shown as the name they stand for.
fn strip_markers(src: &str) -> String {
    let (found, _) = scan(src);
    let mut out = String::new();
    let mut copied = 0;
    for f in &found {
        out.push_str(&src[copied..f.range.start]);
        copied = f.range.end;
        match f.marker {
            Marker::Measured(key) => out.push_str(&format!("[{key}]")),
            Marker::Given(text) => out.push_str(text),
            _ => {}
        }
    }
    out.push_str(&src[copied..]);
    out
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lines a page that used measured figures ends with: one "Measured on …" per file.
/// Empty when `files` is.
pub fn footer<'a>(files: impl IntoIterator<Item = &'a MeasuredFile>) -> String {
    let lines: Vec<String> = files
        .into_iter()
        .map(|f| {
            let title = match &f.measured_on.note {
                Some(note) => format!(" title=\"{}\"", escape(note)),
                None => String::new(),
            };
            format!(
                "<p class=\"measured-on\"{title}>{}</p>\n",
                escape_code(&f.measured_on_line())
            )
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\n\n<div class=\"measured-on\">\n\n---\n\n{}\n</div>\n",
        lines.join("\n")
    )
}

/// HTML for a line that marks commands with backticks (inside HTML, Markdown is not parsed).
fn escape_code(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape(line).split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<code>{part}</code>"));
        } else {
            out.push_str(part);
        }
    }
    out
}

/// A problem found by [`check_pages`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageProblem {
    pub page: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for PageProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.page.display(), self.line, self.message)
    }
}

/// What [`check_pages`] found.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    /// Pages (`.md` files) read.
    pub pages: usize,
    /// `{{#measured}}` markers rendered.
    pub figures: usize,
    /// Claims that hold.
    pub claims_holding: usize,
    /// Everything that fails: a missing file or key, a malformed marker, an unknown claim, a
    /// claim the files contradict (with the page's sentence and what was measured).
    pub problems: Vec<PageProblem>,
}

/// Scans every `*.md` under `src_dir` (the book's `src/`, includes and subfolders too) and
/// renders each marker against `measured` and `claims`; a failing claim is a problem here, as
/// is any marker the book could not render. Behind `book-measure --check`.
pub fn check_pages(
    src_dir: &Path,
    measured: &Measured,
    claims: &[Claim],
) -> Result<CheckReport, MeasuredError> {
    let mut pages = Vec::new();
    collect_md(src_dir, &mut pages)?;
    pages.sort();
    let mut report = CheckReport::default();
    for page in pages {
        let text = std::fs::read_to_string(&page).map_err(|source| MeasuredError::Read {
            path: page.clone(),
            source,
        })?;
        report.pages += 1;
        match render(&text, measured, claims) {
            Ok(rendered) => {
                report.figures += rendered.measured;
                for claim in rendered.claims {
                    match claim.outcome {
                        Outcome::Holds => report.claims_holding += 1,
                        Outcome::Otherwise(details) => report.problems.push(PageProblem {
                            page: page.clone(),
                            line: claim.line,
                            message: format!(
                                "claim `{}` fails: \"{}\" — measured instead: {details}",
                                claim.name, claim.sentence
                            ),
                        }),
                    }
                }
            }
            Err(errors) => report
                .problems
                .extend(errors.into_iter().map(|e| PageProblem {
                    page: page.clone(),
                    line: e.line,
                    message: format!("{}: {}", e.marker, e.message),
                })),
        }
    }
    Ok(report)
}

fn collect_md(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), MeasuredError> {
    let entries = std::fs::read_dir(dir).map_err(|source| MeasuredError::Read {
        path: dir.into(),
        source,
    })?;
    for entry in entries {
        let path = entry
            .map_err(|source| MeasuredError::Read {
                path: dir.into(),
                source,
            })?
            .path();
        if path.is_dir() {
            collect_md(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// The 1-based line of `marker` in `source` (a chapter's file on disk), given that it was found
/// on `line` of the chapter as mdBook expanded it (`{{#include}}`s make the two differ): `line`
/// itself when the marker is there, else the first line holding it; `None` when the marker is
/// not in the file (it came from an included one).
pub fn line_in_source(source: &str, marker: &str, line: usize) -> Option<usize> {
    let lines: Vec<&str> = source.lines().collect();
    if lines
        .get(line.wrapping_sub(1))
        .is_some_and(|l| l.contains(marker))
    {
        return Some(line);
    }
    lines.iter().position(|l| l.contains(marker)).map(|i| i + 1)
}

/// The `NAME.KEY` of each `{{#measured NAME.KEY}}` in `src` (outside code), in order.
pub fn measured_keys(src: &str) -> Vec<String> {
    scan(src)
        .0
        .into_iter()
        .filter_map(|f| match f.marker {
            Marker::Measured(key) if split_key(key).is_ok() => Some(key.to_string()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::tests::{exercise_5, TEST_CLAIMS};
    use crate::file::Figure;

    fn measured(stock: f64, fused: f64) -> Measured {
        let mut m = Measured::empty("book/measured");
        let mut file = exercise_5(stock, fused);
        file.insert("gelu.share", Figure::number(14.23, "%", 1));
        file.insert("speedup", Figure::number(1.489, "×", 2));
        m.insert(file);
        m
    }

    fn ok(src: &str, m: &Measured) -> Rendered {
        render(src, m, TEST_CLAIMS).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn errors(src: &str, m: &Measured) -> String {
        let errs = render(src, m, TEST_CLAIMS).unwrap_err();
        errs.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn figures_and_givens_render() {
        let src = "GELU takes {{#measured exercise-5.gelu.share}} of a step of \
                   {{ #measured  exercise-5.stock.step_ms }}, against the \
                   {{#given 6 ms}} line; fused: {{#measured exercise-5.speedup}}.\n";
        let r = ok(src, &measured(22.6, 15.2));
        insta::assert_snapshot!(r.text, @r#"GELU takes <span class="measured" title="exercise-5.gelu.share">14.2%</span> of a step of <span class="measured" title="exercise-5.stock.step_ms">22.6 ms</span>, against the <span class="given" title="not a measurement">6 ms</span> line; fused: <span class="measured" title="exercise-5.speedup">1.49×</span>."#);
        assert_eq!(r.files, BTreeSet::from(["exercise-5".to_string()]));
        assert_eq!(r.measured, 3);
    }

    #[test]
    fn markers_in_code_are_left_alone() {
        let src = "\
Write `{{#measured exercise-5.nope}}` in a page; ``a {{#given x}} `span` `` too.

```markdown
{{#measured exercise-5.nope}}
{{#claim no-such-claim}}x{{#endclaim}}
```

  ~~~~
  {{#measured exercise-5.nope}}
  ~~~
  still code {{#given y}}
  ~~~~

But this one: {{#measured exercise-5.gelu.share}}.
";
        let r = ok(src, &measured(22.6, 22.7));
        insta::assert_snapshot!(r.text, @r#"
        Write `{{#measured exercise-5.nope}}` in a page; ``a {{#given x}} `span` `` too.

        ```markdown
        {{#measured exercise-5.nope}}
        {{#claim no-such-claim}}x{{#endclaim}}
        ```

          ~~~~
          {{#measured exercise-5.nope}}
          ~~~
          still code {{#given y}}
          ~~~~

        But this one: <span class="measured" title="exercise-5.gelu.share">14.2%</span>.
        "#);
        // A lone backtick is literal: it does not hide the next paragraph's marker.
        let r = ok(
            "A ` alone.\n\n{{#measured exercise-5.speedup}} and `code`.\n",
            &measured(1.0, 1.0),
        );
        assert_eq!(
            r.text,
            "A ` alone.\n\n<span class=\"measured\" title=\"exercise-5.speedup\">1.49×</span> and \
             `code`.\n"
        );
        // An unclosed fence runs to the end of the page.
        let r = ok("```\n{{#measured exercise-5.nope}}\n", &measured(1.0, 1.0));
        assert_eq!(r.text, "```\n{{#measured exercise-5.nope}}\n");
        // Other directives pass through.
        let r = ok(
            "{{#quiz ../quizzes/a.toml}} {{#include x.md}}",
            &measured(1.0, 1.0),
        );
        assert_eq!(r.text, "{{#quiz ../quizzes/a.toml}} {{#include x.md}}");
    }

    #[test]
    fn a_missing_key_or_file_fails_with_its_line() {
        let src =
            "one\n\ntwo {{#measured exercise-5.gelu.shar}}\n{{#measured ceilings.memory_gb_s}}\n";
        insta::assert_snapshot!(errors(src, &measured(1.0, 1.0)), @"
        line 3: {{#measured exercise-5.gelu.shar}}: book/measured/exercise-5.json: no figure `gelu.shar` (nearest: gelu.share; 4 figures in all). Next step: if the key is right, its experiment does not write it yet: list it in book/measured/wanted/PAGE.tsv (crates/book-measure writes what is listed there), then run `cargo run -p book-measure -- exercise-5` (it writes book/measured/exercise-5.json); if not, fix the key
        line 4: {{#measured ceilings.memory_gb_s}}: book/measured/ceilings.json: no such file, so `ceilings.*` figures cannot be rendered. Next step: run `cargo run -p book-measure -- ceilings` (it writes book/measured/ceilings.json)
        ");
    }

    #[test]
    fn malformed_markers_fail() {
        let src =
            "{{#measured}}\n{{#measured a b}}\n{{#given }}\n{{#claim Bad_Name}}x{{#endclaim}}\n\
                   {{#endclaim}}\n{{#measuredx y}} is not ours\n{{#given unclosed";
        insta::assert_snapshot!(errors(src, &measured(1.0, 1.0)), @"
        line 1: {{#measured}}: write one figure's name: `{{#measured NAME.KEY}}`, e.g. `{{#measured exercise-3.gelu.share}}`
        line 2: {{#measured a b}}: write one figure's name: `{{#measured NAME.KEY}}`, e.g. `{{#measured exercise-3.gelu.share}}`
        line 3: {{#given }}: write the text: `{{#given 3.35 TB/s}}`
        line 4: {{#claim Bad_Name}}: write the claim's kebab-case name: `{{#claim NAME}}…{{#endclaim}}`
        line 4: {{#endclaim}}: `{{#endclaim}}` without a `{{#claim NAME}}` before it
        line 5: {{#endclaim}}: `{{#endclaim}}` without a `{{#claim NAME}}` before it
        line 7: {{#given: this marker is not closed with `}}`
        ");
    }

    #[test]
    fn a_claim_that_holds_renders_its_sentence() {
        let src = "So {{#claim fusion-alone-moves-nothing}}fusion alone moves nothing on a CPU\n\
                   (`fused` is {{#measured exercise-5.fused.step_ms}}){{#endclaim}}.";
        let r = ok(src, &measured(22.6, 22.7));
        insta::assert_snapshot!(r.text, @r#"
        So <span class="claim" data-claim="fusion-alone-moves-nothing">fusion alone moves nothing on a CPU
        (`fused` is <span class="measured" title="exercise-5.fused.step_ms">22.7 ms</span>)</span>.
        "#);
        assert_eq!(r.claims.len(), 1);
        assert_eq!(r.claims[0].outcome, Outcome::Holds);
        assert_eq!(
            r.claims[0].sentence,
            "fusion alone moves nothing on a CPU (`fused` is [exercise-5.fused.step_ms])"
        );
    }

    #[test]
    fn a_claim_that_fails_renders_the_sentence_and_what_was_measured() {
        let src = "{{#claim fusion-alone-moves-nothing}}Fusion alone moves nothing on a CPU.{{#endclaim}}";
        let r = ok(src, &measured(22.6, 15.2));
        insta::assert_snapshot!(r.text, @r#"<span class="claim claim-otherwise" data-claim="fusion-alone-moves-nothing">Fusion alone moves nothing on a CPU.</span> <em class="measured-otherwise">(This machine measured otherwise: the fused MLP took 15.2 ms a step against the stock MLP's 22.6 ms: 0.67×)</em>"#);
        assert_eq!(r.files, BTreeSet::from(["exercise-5".to_string()]));
    }

    #[test]
    fn bad_claims_fail_the_build() {
        let m = measured(1.0, 1.0);
        insta::assert_snapshot!(errors("{{#claim no-such}}x{{#endclaim}}", &m), @"line 1: {{#claim no-such}}: no claim called `no-such` (known: fusion-alone-moves-nothing). Next step: spell it as in crates/measured/src/claims.rs, or add it there and to book/measured/wanted/PAGE.tsv; if it is there, this program is older: rebuild it (scripts/install-book-tools.sh rebuilds the book's preprocessor)");
        insta::assert_snapshot!(errors("{{#claim fusion-alone-moves-nothing}}open", &m), @"line 1: {{#claim fusion-alone-moves-nothing}}: this claim is never closed with `{{#endclaim}}`");
        insta::assert_snapshot!(errors("{{#claim fusion-alone-moves-nothing}}a\n\nb{{#endclaim}}", &m), @"line 1: {{#claim fusion-alone-moves-nothing}}: the claim's sentence runs past a blank line (it ends on line 3): keep it within one paragraph");
        let err = errors(
            "{{#claim fusion-alone-moves-nothing}}x{{#endclaim}}",
            &Measured::empty("m"),
        );
        assert!(
            err.starts_with(
                "line 1: {{#claim fusion-alone-moves-nothing}}: m/exercise-5.json: no such file"
            ),
            "{err}"
        );
    }

    #[test]
    fn the_footer_has_one_measured_on_line_per_file() {
        let m = measured(1.0, 1.0);
        let mut h200 = exercise_5(1.0, 1.0);
        h200.name = "h200".into();
        h200.measured_on.source = crate::Source::Transcribed;
        h200.measured_on.machine = "one NVIDIA H200".into();
        h200.measured_on.device = "cuda".into();
        h200.measured_on.kernel_path = Some("NVIDIA H200".into());
        h200.measured_on.note =
            Some("transcribed from scripts/gpu-check.sh's run of 2026-12-04".into());
        let files = [m.file("exercise-5").unwrap(), &h200];
        insta::assert_snapshot!(footer(files), @r#"


        <div class="measured-on">

        ---

        <p class="measured-on">Measured on a test machine (cpu, packed-avx512), 2026-12-05, by <code>book-measure exercise-5</code> [exercise-5.json]</p>

        <p class="measured-on" title="transcribed from scripts/gpu-check.sh's run of 2026-12-04">Measured on one NVIDIA H200 (cuda), 2026-12-05; transcribed from scripts/gpu-check.sh's run of 2026-12-04 [h200.json]</p>

        </div>
        "#);
        assert_eq!(footer([]), "");
    }

    #[test]
    fn check_pages_names_page_line_and_sentence() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("includes")).unwrap();
        std::fs::write(
            src.join("exercise-5.md"),
            "# Exercise 5\n\n{{#claim fusion-alone-moves-nothing}}Fusion alone\nmoves nothing.{{#endclaim}}\n\
             It took {{#measured exercise-5.fused.step_ms}}.\n",
        )
        .unwrap();
        std::fs::write(
            src.join("includes/table.md"),
            "{{#measured exercise-5.nope}}\n",
        )
        .unwrap();
        std::fs::write(src.join("notes.txt"), "{{#measured exercise-5.nope}}\n").unwrap();

        let report = check_pages(&src, &measured(22.6, 22.7), TEST_CLAIMS).unwrap();
        assert_eq!(
            (report.pages, report.figures, report.claims_holding),
            (2, 1, 1)
        );
        assert_eq!(report.problems.len(), 1);
        assert!(report.problems[0]
            .to_string()
            .contains("includes/table.md:1: {{#measured exercise-5.nope}}: "));

        let report = check_pages(&src, &measured(22.6, 15.2), TEST_CLAIMS).unwrap();
        let page = src.join("exercise-5.md");
        assert_eq!(
            report.problems[0].to_string(),
            format!(
                "{}:3: claim `fusion-alone-moves-nothing` fails: \"Fusion alone moves nothing.\" \
                 — measured instead: the fused MLP took 15.2 ms a step against the stock MLP's \
                 22.6 ms: 0.67×",
                page.display()
            )
        );
    }

    #[test]
    fn lines_in_the_source_file() {
        let source = "a\n{{#include x.md}}\nb {{#measured e.k}}\n";
        assert_eq!(line_in_source(source, "{{#measured e.k}}", 3), Some(3));
        assert_eq!(line_in_source(source, "{{#measured e.k}}", 9), Some(3));
        assert_eq!(line_in_source(source, "{{#measured e.z}}", 3), None);
        assert_eq!(
            measured_keys("`{{#measured a.b}}` {{#measured c.d}}"),
            vec!["c.d"]
        );
    }
}
