//! Running the workspace's programs: where they are, building the missing ones, one spinner per
//! step, each step's output in a log, and an error that names the step, the command and the
//! next step when one fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::sheet::{today_utc, Sheet};

/// What every experiment shares: the programs, the scratch folder, where files go, progress.
pub struct Ctx {
    pub root: PathBuf,
    pub quick: bool,
    /// Where the dev profile's programs are (target/debug).
    pub bin: PathBuf,
    pub measured_dir: PathBuf,
    pub images_dir: PathBuf,
    /// Scratch: the exercise folders the programs write their results into, and the logs.
    work: Option<tempfile::TempDir>,
    /// The scratch folder's path.
    pub work_path: PathBuf,
    pub date: String,
    progress: MultiProgress,
    show_progress: bool,
    keep: bool,
}

impl Drop for Ctx {
    fn drop(&mut self) {
        if let (true, Some(work)) = (self.keep, self.work.take()) {
            let path = work.keep();
            eprintln!(
                "book-measure: the scratch folder is kept: {}",
                path.display()
            );
        }
    }
}

impl Ctx {
    pub fn new(
        root: &Path,
        quick: bool,
        measured_dir: &Path,
        images_dir: &Path,
        show_progress: bool,
    ) -> Result<Ctx> {
        for dir in [measured_dir, images_dir] {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the output folder {}", dir.display()))?;
        }
        let work = tempfile::Builder::new()
            .prefix("book-measure.")
            .tempdir()
            .context("cannot create a scratch folder under the system's temporary folder")?;
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        let progress = if show_progress {
            MultiProgress::new()
        } else {
            MultiProgress::with_draw_target(ProgressDrawTarget::hidden())
        };
        Ok(Ctx {
            root: root.to_path_buf(),
            quick,
            bin: target.join("debug"),
            measured_dir: measured_dir.to_path_buf(),
            images_dir: images_dir.to_path_buf(),
            work_path: work.path().to_path_buf(),
            work: Some(work),
            date: today_utc(),
            progress,
            show_progress,
            keep: false,
        })
    }

    /// Keeps the scratch folder after this program ends, whether the run succeeds or fails.
    pub fn keep_scratch(&mut self) {
        self.keep = true;
    }

    /// A program of the workspace, as built in the dev profile.
    pub fn program(&self, name: &str) -> PathBuf {
        self.bin
            .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
    }

    /// A folder in the scratch space (created).
    pub fn scratch(&self, name: &str) -> Result<PathBuf> {
        let dir = self.work_path.join(name);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(dir)
    }

    /// A scratch copy of an exercise's folder for a solution's `--exercise-dir`: its
    /// answers.toml template, which the solution fills in, and an empty results/.
    pub fn exercise_dir(&self, number: u32) -> Result<PathBuf> {
        let dir = self.scratch(&format!("exercise-{number}"))?;
        let template = self
            .root
            .join(format!("exercises/exercise-{number}/answers.toml"));
        std::fs::copy(&template, dir.join("answers.toml")).with_context(|| {
            format!("cannot copy {} into the scratch folder", template.display())
        })?;
        Ok(dir)
    }

    /// Builds `packages` with cargo in the dev profile, one `cargo build -p P` each (a no-op
    /// when up to date), unless `build` is false; then every program must exist. One package a
    /// command: each package's own build is the one scripts/check-features.py keeps equal to the
    /// workspace's, while several `-p` together resolve features of their own (the HTTP stack
    /// for gpt2 and course) and would compile them again, and again for the next `cargo run`.
    pub fn ensure_programs(&self, packages: &[&str], build: bool) -> Result<()> {
        for p in packages {
            let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
            cmd.args(["build", "--quiet", "-p", p])
                .current_dir(&self.root);
            let shown = shown(&cmd);
            if !build {
                if !self.program(p).is_file() {
                    bail!(
                        "not built: {p} in {}; build it with `{shown}` (or run without --no-build)",
                        self.bin.display()
                    );
                }
                continue;
            }
            let spinner = self.spinner(format!("building: {shown}"));
            let output = cmd.output();
            spinner.finish_and_clear();
            let output =
                output.with_context(|| format!("cannot run `{shown}`: is cargo on the PATH?"))?;
            if !output.status.success() {
                bail!(
                    "`{shown}` failed:\n{}\nfix the build and rerun book-measure",
                    String::from_utf8_lossy(&output.stderr).trim_end()
                );
            }
            if !self.program(p).is_file() {
                bail!(
                    "`{shown}` succeeded but {} is not there",
                    self.program(p).display()
                );
            }
        }
        Ok(())
    }

    /// The bar over the experiments.
    pub fn experiments_bar(&self, len: usize) -> ProgressBar {
        let bar = self.progress.add(ProgressBar::new(len as u64));
        bar.set_style(
            ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix("book-measure");
        bar
    }

    /// A line above the bars (or on its own without them).
    pub fn println(&self, line: impl AsRef<str>) {
        if self.show_progress {
            let _ = self.progress.println(line.as_ref());
        } else {
            println!("{}", line.as_ref());
        }
    }

    /// A spinner for a long step that is not a child program (e.g. waiting for a server).
    pub fn spinner(&self, message: String) -> ProgressBar {
        let spinner = self.progress.add(ProgressBar::new_spinner());
        spinner.set_style(
            ProgressStyle::with_template("  {spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        spinner.set_message(message);
        spinner.enable_steady_tick(Duration::from_millis(120));
        spinner
    }

    /// Runs one step: `program args…` with a spinner, its standard output and error in
    /// `LOGS/STEP.log`; returns its standard output. On failure: the step, the command, the
    /// last lines it printed and where the rest is.
    pub fn step(&self, step: &str, cmd: &mut Command) -> Result<String> {
        let shown = shown(cmd);
        self.println(format!("book-measure: {step}: {shown}"));
        let logs = self.scratch("logs")?;
        let log = logs.join(format!("{}.log", crate::sheet::key_part(step)));
        let spinner = self.spinner(format!("{step}: {}", short(&shown)));
        let output = cmd
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .output()
            .with_context(|| {
                format!("{step}: cannot start `{shown}`: build it with `cargo build --workspace --all-targets`")
            });
        spinner.finish_and_clear();
        let output = output?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let _ = std::fs::write(
            &log,
            format!("$ {shown}\n{stdout}\n--- stderr ---\n{stderr}"),
        );
        if !output.status.success() {
            let tail: Vec<&str> = stdout
                .lines()
                .chain(stderr.lines())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .take(25)
                .collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            // Kept, so the whole output can be read after the scratch folder is gone.
            let kept = self.root.join("target/book-measure-failed.log");
            let _ = std::fs::copy(&log, &kept);
            bail!(
                "the {step} step failed ({}): `{shown}`\nits last lines:\n{}\nthe whole output: {}; \
                 run the command by hand to see it fail",
                output.status,
                tail.join("\n"),
                kept.display()
            );
        }
        Ok(stdout)
    }

    /// Writes the sheet into the measured folder. The file's command is the book-measure
    /// command that makes it; its note says the setting (`about`, first: the "Measured on" line
    /// shows it) and then the programs that ran.
    pub fn write(&self, sheet: &Sheet, about: &str) -> Result<PathBuf> {
        let mut sheet = sheet.clone();
        sheet.note = Some(format!("{about}; runs {}", sheet.command));
        sheet.command = format!(
            "book-measure {}{}",
            sheet.name,
            if self.quick { " --quick" } else { "" }
        );
        sheet.write(&self.measured_dir, &self.date)
    }

    /// Copies a picture a program drew into the images folder under `name`, after checking it
    /// is a drawing.
    pub fn picture(&self, from: &Path, name: &str) -> Result<PathBuf> {
        let text = std::fs::read_to_string(from).with_context(|| {
            format!(
                "{} was not written: the step that draws it printed why above",
                from.display()
            )
        })?;
        if name.ends_with(".svg") && !text.contains("<svg") {
            bail!(
                "{} is not an SVG drawing; rerun and read the step's log",
                from.display()
            );
        }
        let to = self.images_dir.join(name);
        std::fs::write(&to, text).with_context(|| format!("cannot write {}", to.display()))?;
        Ok(to)
    }

    /// Writes a text file into the images folder.
    pub fn image_text(&self, name: &str, text: &str) -> Result<PathBuf> {
        let to = self.images_dir.join(name);
        std::fs::write(&to, text).with_context(|| format!("cannot write {}", to.display()))?;
        Ok(to)
    }

    /// The command line as the measured file records it: program names without their folder.
    pub fn recorded(&self, cmd: &Command) -> String {
        let work = self.work_path.display().to_string();
        let mut words = vec![Path::new(cmd.get_program())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()];
        for a in cmd.get_args() {
            let a = a.to_string_lossy().replace(&work, "SCRATCH");
            let a = a.replace(&self.bin.display().to_string(), "target/debug");
            words.push(quote(&a));
        }
        words.join(" ")
    }
}

/// A command as one would type it: arguments with spaces in double quotes.
pub fn shown(cmd: &Command) -> String {
    let mut words = vec![quote(&cmd.get_program().to_string_lossy())];
    words.extend(cmd.get_args().map(|a| quote(&a.to_string_lossy())));
    words.join(" ")
}

fn quote(word: &str) -> String {
    if word.contains(' ') {
        format!("\"{word}\"")
    } else {
        word.to_string()
    }
}

fn short(s: &str) -> String {
    const MAX: usize = 90;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}…")
    }
}
