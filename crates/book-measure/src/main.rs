//! `book-measure`: the book measures itself.
//!
//! Runs every experiment of the course's own that the book quotes, with the workspace's own
//! programs (the dev profile's, in target/debug), reads the JSON results they write with the
//! crates' own readers, and writes one measured file per experiment (`book/measured/NAME.json`,
//! the format of the `measured` crate) and the book's pictures (`book/src/images`). The book's
//! `{{#measured NAME.KEY}}` markers are rendered from those files, so `book-measure && mdbook
//! serve book` shows the book with this machine's figures.
//!
//! `--quick` checks in seconds that every experiment still runs (the tiny synthetic model, few
//! repeats), into a scratch folder, never over the committed files. `--check` checks the
//! committed files against the book: every key the pages use exists, every claim holds.

mod experiments;
mod machine;
mod profile_figures;
mod run;
mod sheet;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;

use experiments::{Experiment, EXPERIMENTS};
use run::Ctx;

#[derive(Parser)]
#[command(
    name = "book-measure",
    about = "Run the experiments the book quotes and write book/measured/<name>.json and the book's pictures",
    long_about = None,
    after_long_help = experiments::HELP.as_str(),
    after_help = "`book-measure --help` lists every experiment with the commands it runs and the files it writes."
)]
struct Args {
    /// Experiments to run, by name [default: all of them, in the order listed below].
    #[arg(value_name = "EXPERIMENT")]
    experiments: Vec<String>,
    /// Check that every experiment still runs, in seconds: the tiny synthetic model and few
    /// repeats, written to a scratch folder (target/book-measure-quick unless --out), never over
    /// the book's files. Its figures are not for the book.
    #[arg(long)]
    quick: bool,
    /// Where to write the measured files; the pictures go to DIR/images [default:
    /// book/measured, and the pictures to book/src/images].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Measure nothing: check the measured files (book/measured, or --out) against the book:
    /// every {{#measured}} key a page uses exists and every {{#claim}} holds. Exits non-zero
    /// naming the page and the sentence otherwise.
    #[arg(long, conflicts_with_all = ["quick", "list", "experiments"])]
    check: bool,
    /// List the experiments, the commands each runs and the files each writes, and exit.
    #[arg(long)]
    list: bool,
    /// Run the programs as they are in target/debug, without `cargo build -p ...` first
    /// [default: build them first, a no-op when they are up to date, so the figures are the
    /// current code's].
    #[arg(long)]
    no_build: bool,
    /// Hide the progress bars (the steps are still named as they start).
    #[arg(long)]
    no_progress: bool,
    /// Keep the scratch folder (the exercise folders the programs wrote their results into, and
    /// each step's log) and print where it is.
    #[arg(long)]
    keep_scratch: bool,
}

fn main() -> ExitCode {
    // `book-measure --list | head`: the reader leaving ends the program quietly, status 0.
    output::pipe::end_quietly_when_closed();
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) if output::pipe::is_broken_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("book-measure: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The repository's root: the folder two above this crate's manifest when the binary runs
/// from its own checkout, else the current folder when it holds the book.
fn repo_root() -> Result<PathBuf> {
    let from_manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for candidate in [from_manifest, PathBuf::from(".")] {
        if candidate.join("book/book.toml").is_file() && candidate.join("Cargo.toml").is_file() {
            return candidate
                .canonicalize()
                .with_context(|| format!("cannot resolve {}", candidate.display()));
        }
    }
    bail!("cannot find the course's checkout (a folder with book/book.toml): run book-measure from the repository's root")
}

fn run(args: Args) -> Result<ExitCode> {
    if args.list {
        print!("{}", experiments::listing());
        return Ok(ExitCode::SUCCESS);
    }
    let root = repo_root()?;
    if args.check {
        let dir = args
            .out
            .clone()
            .unwrap_or_else(|| root.join("book/measured"));
        return check(&root, &dir);
    }
    let chosen = choose(&args.experiments)?;
    if let (true, Some(out)) = (args.quick, &args.out) {
        let committed = root.join("book/measured");
        if out.canonicalize().ok() == committed.canonicalize().ok() && committed.exists() {
            bail!(
                "--quick writes the tiny models' figures, which are not for the book: give it another \
                 folder than {} (or no --out: target/book-measure-quick)",
                committed.display()
            );
        }
    }
    let (measured_dir, images_dir) = match (&args.out, args.quick) {
        (Some(dir), _) => (dir.clone(), dir.join("images")),
        (None, true) => {
            let dir = root.join("target/book-measure-quick");
            (dir.clone(), dir.join("images"))
        }
        (None, false) => (root.join("book/measured"), root.join("book/src/images")),
    };
    let mut ctx = Ctx::new(
        &root,
        args.quick,
        &measured_dir,
        &images_dir,
        !args.no_progress,
    )?;
    if args.keep_scratch {
        ctx.keep_scratch();
    }
    let mut packages: Vec<&str> = Vec::new();
    for p in chosen.iter().flat_map(|e| e.programs) {
        if !packages.contains(p) {
            packages.push(p);
        }
    }
    ctx.ensure_programs(&packages, !args.no_build)?;
    if !args.quick {
        if let Some(warning) = machine::busy_warning() {
            ctx.println(warning);
        }
    }
    let started = Instant::now();
    let bar = ctx.experiments_bar(chosen.len());
    let mut written = Vec::new();
    for experiment in &chosen {
        bar.set_message(experiment.name);
        let begun = Instant::now();
        let files = (experiment.run)(&mut ctx).with_context(|| {
            format!(
                "experiment `{}` failed; fix the step named above and rerun `book-measure {}{}`",
                experiment.name,
                experiment.name,
                if args.quick { " --quick" } else { "" }
            )
        })?;
        ctx.println(format!(
            "book-measure: {} done in {:.1} s",
            experiment.name,
            begun.elapsed().as_secs_f64()
        ));
        written.extend(files);
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!("book-measure: wrote");
    for path in &written {
        let shown = path.strip_prefix(&root).unwrap_or(path);
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        println!("  {} ({bytes} bytes)", shown.display());
    }
    println!(
        "book-measure: {} experiment(s) in {:.1} s on {}{}",
        chosen.len(),
        started.elapsed().as_secs_f64(),
        machine::Machine::this().line(),
        if args.quick {
            " (--quick: the tiny model, not for the book)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The experiments named, in the registry's order; all of them when none is named.
fn choose(names: &[String]) -> Result<Vec<&'static Experiment>> {
    for name in names {
        if !EXPERIMENTS.iter().any(|e| e.name == name) {
            let known: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
            bail!(
                "no experiment is named `{name}`; the experiments are {} (see `book-measure --list`)",
                known.join(", ")
            );
        }
    }
    Ok(EXPERIMENTS
        .iter()
        .filter(|e| names.is_empty() || names.iter().any(|n| n == e.name))
        .collect())
}

/// `--check`: the measured files in `dir` against the book's pages.
fn check(root: &Path, dir: &Path) -> Result<ExitCode> {
    let files = measured::Measured::load_dir(dir)
        .with_context(|| format!("cannot read the measured files in {}", dir.display()))?;
    let src = root.join("book/src");
    let report = measured::markers::check_pages(&src, &files, measured::claims::CLAIMS)
        .with_context(|| format!("cannot check the pages under {}", src.display()))?;
    let problems = report.problems;
    if problems.is_empty() {
        println!(
            "book-measure --check: {} pages, {} figures and {} claims hold on {}",
            report.pages,
            report.figures,
            report.claims_holding,
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    for p in &problems {
        let shown = p.page.strip_prefix(root).unwrap_or(&p.page);
        eprintln!("{}:{}: {}", shown.display(), p.line, p.message);
    }
    eprintln!(
        "book-measure --check: {} problem(s): add the missing keys to the experiment that measures \
         them (crates/book-measure) and rerun it, or fix the page",
        problems.len()
    );
    Ok(ExitCode::FAILURE)
}
