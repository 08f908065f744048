//! `mdbook-measured`: the book's preprocessor, run by mdBook (`[preprocessor.measured]` in
//! book/book.toml). See the library's documentation for what it renders.

use std::io::{self, Write as _};
use std::process::ExitCode;

use mdbook_measured::MeasuredPreprocessor;
use mdbook_preprocessor::Preprocessor;

const HELP: &str = "\
mdbook-measured: the book's mdBook preprocessor. mdBook runs it; you do not.

It renders {{#measured NAME.KEY}} (figure KEY of book/measured/NAME.json), {{#given TEXT}}
(a number that is not a measurement) and {{#claim NAME}}…{{#endclaim}} (a sentence checked
against the measured files), and ends each page that used figures with where they were measured.

Usage (mdBook's protocol):
  mdbook-measured supports RENDERER   exit 0: every renderer is supported
  mdbook-measured < [context, book]   the book, as JSON, on stdout

Install: scripts/install-book-tools.sh (links target/debug/mdbook-measured into target/tools/bin).
Measure: cargo run -p book-measure (writes book/measured/*.json), then mdbook serve book.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let preprocessor = MeasuredPreprocessor::default();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["supports", renderer] => match preprocessor.supports_renderer(renderer) {
            Ok(true) => ExitCode::SUCCESS,
            _ => ExitCode::FAILURE,
        },
        [] => match run(&preprocessor) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mdbook-measured: {e:#}");
                ExitCode::FAILURE
            }
        },
        ["--help" | "-h"] => {
            println!("{HELP}");
            ExitCode::SUCCESS
        }
        ["--version" | "-V"] => {
            println!("mdbook-measured {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("mdbook-measured: unexpected arguments {args:?}\n\n{HELP}");
            ExitCode::from(2)
        }
    }
}

fn run(preprocessor: &MeasuredPreprocessor) -> anyhow::Result<()> {
    let (ctx, book) = mdbook_preprocessor::parse_input(io::stdin().lock())?;
    if !ctx.mdbook_version.starts_with("0.5.") {
        eprintln!(
            "mdbook-measured: warning: built against mdBook {}, run by mdBook {} (the book is \
             written for 0.5; scripts/install-book-tools.sh installs it)",
            mdbook_preprocessor::MDBOOK_VERSION,
            ctx.mdbook_version
        );
    }
    let book = preprocessor.run(&ctx, book)?;
    let mut out = io::stdout().lock();
    serde_json::to_writer(&mut out, &book)?;
    out.flush()?;
    Ok(())
}
