//! The command line (clap). `--help` on every command says what it does and what it reads.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "course",
    version,
    about = "Run, check and grade the exercises of the benchmarking-versus-profiling course",
    long_about = "Run, check and grade the exercises of the benchmarking-versus-profiling course.\n\n\
        Learners: `course list` shows your progress, `course run N` runs exercise N, `course check N` grades it \
        (exit code 0 only when it passes), `course hint N` reveals one more hint, `course watch` re-checks the \
        current exercise whenever you save. `course id` shows your learner id (asked for once; some exercises are \
        drawn from it).\n\n\
        Instructors: `course grade COHORT_DIR` grades a whole workshop into gradebook.csv and one feedback page \
        per student.\n\n\
        Engineers: `course bench --base-url URL --rate R` measures a server under load (P90 TTFT and more, with \
        noise bounds); `course bench --compare A/bench.json B/bench.json` says whether B is faster.\n\n\
        Course authors: the course's own lint is another binary, `course-dev check` (`cargo run -p course-dev -- \
        check`), which scripts/test.sh runs.\n\n\
        The course root is the folder holding exercises/info.toml, found by walking up from the current folder \
        (or given with --root)."
)]
pub struct Cli {
    /// The course root (the folder holding exercises/info.toml); default: found from the current folder.
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

/// How an exercise is built (run, check, watch).
#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    /// Cargo features of the exercise, comma-separated. `cuda` builds it with candle's CUDA
    /// backend (exercises 3, 5 and 8; then run it with `-- --device cuda`): it needs nvcc (the
    /// CUDA toolkit, or scripts/build-cuda.sh's PyPI toolchain) and builds into target/cuda,
    /// next to the CPU build. An exercise without the feature is built without it.
    /// Default: the COURSE_FEATURES environment variable.
    #[arg(long, value_name = "LIST")]
    pub features: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// For people, with colour on a terminal.
    Terminal,
    Markdown,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show every exercise with its status, score, hints used and chapter.
    List,
    /// Build and run exercise N as `cargo run -p exercise-N` does (the same build); extra arguments go to it.
    /// On an NVIDIA GPU: `course run 3 --features cuda -- --device cuda`.
    #[command(after_help = course_model::exit::EXIT_STATUS_HELP)]
    Run {
        /// Exercise number.
        n: u32,
        #[command(flatten)]
        build: BuildArgs,
        /// Arguments passed to the exercise, after `--`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Check exercise N: build, run its tests (if it has any), grade answers.toml and results/*.json.
    /// Exits 0 only when the exercise passes. A CUDA run's results are graded by self CUDA time.
    /// `--format json` prints the points and maximum points of every check in a stable shape
    /// (crates/course/instructor-kit/course-check.schema.json) for autograders.
    #[command(after_help = course_model::exit::EXIT_STATUS_HELP)]
    Check {
        /// Exercise number.
        n: u32,
        #[command(flatten)]
        build: BuildArgs,
        /// How to print the report.
        #[arg(long, value_enum, default_value = "terminal")]
        format: Format,
    },
    /// Reveal the next hint of exercise N (the ones already revealed are shown again).
    Hint {
        /// Exercise number.
        n: u32,
    },
    /// Re-check the current exercise (the first one not passed) whenever its files change; Ctrl-C to stop.
    Watch {
        /// Watch this exercise instead of the current one.
        #[arg(long)]
        exercise: Option<u32>,
        #[command(flatten)]
        build: BuildArgs,
    },
    /// Restore exercise N's starting files (from git) after asking; your results/ are kept.
    Reset {
        /// Exercise number.
        n: u32,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
    /// Show the reference solution of exercise N, once it passes.
    Solution {
        /// Exercise number.
        n: u32,
        /// Show it before the exercise passes; this is recorded in your progress and your report.
        #[arg(long)]
        force: bool,
    },
    /// Grade a workshop: one folder, .zip or .tar.gz per student in COHORT_DIR. Writes OUT/gradebook.csv and
    /// OUT/feedback/STUDENT.md and prints a summary. Runs no submitted code unless --run-tests is given.
    #[command(after_help = GRADE_EXIT_HELP)]
    Grade {
        /// Folder holding one submission per student.
        cohort_dir: PathBuf,
        /// Answer key folder (key.toml, and quizzes/ with variant quiz files); default: crates/grader/key.
        #[arg(long, value_name = "DIR")]
        key: Option<PathBuf>,
        /// Manual grades that win over the autograder; default: OUT/overrides.toml if it exists.
        #[arg(long, value_name = "FILE")]
        overrides: Option<PathBuf>,
        /// Where to write the gradebook and the feedback.
        #[arg(long, value_name = "DIR", default_value = "grades")]
        out: PathBuf,
        /// Grading threads; default: the number of CPUs.
        #[arg(long)]
        threads: Option<usize>,
        /// Also re-run each learner's exercise tests (exercises with `test = true`) on their own src/, one
        /// learner after another, in a scratch copy of the course with a time limit, a memory limit and (on
        /// Linux) no network; results go into the gradebook's `tests` column. This runs submitted code: the
        /// output says what is and is not isolated.
        #[arg(long)]
        run_tests: bool,
        /// Time limit per test binary, in seconds (`90`, `90s`, `2m`); then its process group is killed.
        #[arg(long, value_name = "TIME", default_value = "120", value_parser = parse_seconds, requires = "run_tests")]
        test_timeout: std::time::Duration,
        /// Memory limit per test binary (address space, RLIMIT_AS): `512M`, `4G`.
        #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = parse_size, requires = "run_tests")]
        test_memory: u64,
        /// Time limit for building one learner's tests (the first build also compiles the dependencies).
        #[arg(long, value_name = "TIME", default_value = "30m", value_parser = parse_seconds, requires = "run_tests")]
        test_build_timeout: std::time::Duration,
        /// Where the scratch workspace and the build folder shared by the cohort go; default: the course's
        /// target/grade-tests (kept between runs, so dependencies compile once).
        #[arg(long, value_name = "DIR", requires = "run_tests")]
        test_dir: Option<PathBuf>,
        #[command(flatten)]
        gradebook: Box<GradebookArgs>,
    },
    /// The Gradescope autograder (crates/course/instructor-kit/gradescope): grade ROOT/submission and write
    /// ROOT/results/results.json in Gradescope's format, one test per graded question, each with the feedback
    /// `course check` prints; the graded bank's model answers are tests shown after the due date. Runs no
    /// submitted code; applies no late policy (Gradescope applies its own).
    #[command(after_help = GRADESCOPE_EXIT_HELP)]
    Gradescope {
        /// Gradescope's folder (submission/, submission_metadata.json, results/); default: $AUTOGRADER_ROOT,
        /// else /autograder.
        #[arg(long, value_name = "DIR")]
        autograder_root: Option<PathBuf>,
        /// CSV with a header `course_id,email,gradescope_id`: maps Gradescope's users[].email or users[].id
        /// (submission_metadata.json) to the learner's course id. Without it, the id in the submission's
        /// learner.toml is used and nothing is checked against it.
        #[arg(long, value_name = "FILE")]
        roster: Option<PathBuf>,
        /// Grade these exercises only (one Gradescope assignment per exercise, say): `--exercises 1,6`.
        #[arg(long, value_name = "N,N,...", value_delimiter = ',', num_args = 1)]
        exercises: Vec<u32>,
        /// Answer key folder; default: crates/grader/key.
        #[arg(long, value_name = "DIR")]
        key: Option<PathBuf>,
    },
    /// Print the GitHub Classroom workflow (crates/course/instructor-kit/github-classroom/classroom.yml):
    /// one `autograding-command-grader` step per exercise running `course check N`, with the exercise's
    /// maximum points (the answer key and graded bank, as the gradebook counts them), and the grading reporter.
    GithubClassroom,
    /// Show your learner id, or set it (`course id alice`). It is stored in exercises/learner.toml, which you
    /// submit with your exercises: your own variant of some exercises is drawn from it, and `course grade`
    /// checks it against your submission's name. `course run` and `course check` ask for it the first time
    /// (without a terminal, set COURSE_LEARNER_ID instead).
    Id {
        /// Your id: your name or student number (letters, digits, '-', '_' or '.'); leave out to show it.
        name: Option<String>,
    },
    // No doc comment here: the bench crate's own help (BenchArgs) is the command's help.
    Bench(Box<bench::cli::BenchArgs>),
}

/// `course grade`'s exit status, by the course's rule (course_model::exit).
const GRADE_EXIT_HELP: &str = "Exit status: 0 the gradebook is written and every submission \
    was graded; 1 the gradebook is written, but some submission could not be graded (an \
    unreadable archive, no exercises found, the grader failed on it: see its flags); 2 nothing \
    was written, the course itself could not run (a missing or corrupt key, cohort folder or \
    overrides file, a bug).";

/// `course gradescope`'s exit status.
const GRADESCOPE_EXIT_HELP: &str = "Exit status: 0 results.json is written (whatever the score: \
    Gradescope records it); 2 it is not, the course itself could not run (no submission folder, \
    a corrupt roster or metadata file, a bug): Gradescope then shows the autograder as failed, \
    and its output says why.";

/// `90`, `90s`, `1.5m`, `2m`: a positive duration.
fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let (number, scale) = match t.strip_suffix('m') {
        Some(n) => (n, 60.0),
        None => (t.strip_suffix('s').unwrap_or(t), 1.0),
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(std::time::Duration::from_secs_f64(n * scale)),
        _ => Err(format!(
            "`{text}` is not a time: write seconds (`90`, `90s`) or minutes (`2m`)"
        )),
    }
}

/// `512M`, `4G`, `4GiB`, `65536K`: a positive size in bytes (binary units).
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let unit_start = upper
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(upper.len());
    let (number, unit) = upper.split_at(unit_start);
    let scale: u64 = match unit.trim() {
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => {
            return Err(format!(
                "`{text}` is not a size: write a number with K, M or G (`512M`, `4G`)"
            ))
        }
    };
    match number.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n * (scale as f64) < u64::MAX as f64 => {
            Ok((n * scale as f64) as u64)
        }
        _ => Err(format!(
            "`{text}` is not a size: write a number with K, M or G (`512M`, `4G`)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_sizes_parse_and_nonsense_is_refused() {
        assert_eq!(parse_seconds("90").unwrap().as_secs(), 90);
        assert_eq!(parse_seconds("2m").unwrap().as_secs(), 120);
        assert_eq!(parse_seconds("1.5s").unwrap().as_millis(), 1500);
        assert!(
            parse_seconds("0").is_err()
                && parse_seconds("soon").is_err()
                && parse_seconds("-3").is_err()
        );
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert!(
            parse_size("512").is_err() && parse_size("lots").is_err() && parse_size("0G").is_err()
        );
    }
}

/// The deadline, the exports, `--only`, `--resume` and the similarity report.
#[derive(Debug, Clone, clap::Args)]
pub struct GradebookArgs {
    /// The deadline, RFC 3339 (`2027-01-15T23:59:00Z`, or with an offset). Each submission's time is read
    /// from --times, else from COHORT_DIR/STUDENT.submitted_at (one RFC 3339 time, written by whoever
    /// collected the files), else from the newest time its files carry (set by the learner: flagged
    /// time-from-files). The gradebook gains raw, submitted_at, time_source and days_late; total is the final
    /// score.
    #[arg(long, value_name = "TIME", value_parser = grader::late::parse_time)]
    pub due: Option<grader::late::Time>,
    /// Percent of the maximum points taken per started day late (`10%/day`); the score stops at 0.
    #[arg(long, value_name = "PERCENT", value_parser = grader::late::parse_penalty, requires = "due", default_value = "0%/day")]
    pub late_penalty: f64,
    /// Later than this after --due, the score is 0 (`3d`, `72h`, `90m`).
    #[arg(long, value_name = "DURATION", value_parser = grader::late::parse_cutoff, requires = "due")]
    pub late_cutoff: Option<grader::late::Span>,
    /// The learning platform's (or Gradescope's) submission times: a CSV with a header naming `student`
    /// and `submitted_at` (RFC 3339). They come first.
    #[arg(long, value_name = "FILE", requires = "due")]
    pub times: Option<PathBuf>,
    /// Also write OUT/gradebook-canvas.csv (Canvas's gradebook import: Student, ID, SIS User ID, SIS Login
    /// ID, Section, then the assignment) or OUT/gradebook-moodle.csv (Moodle's grade import: Email address,
    /// then one column per exercise and the total). Needs --roster.
    #[arg(long, value_enum, value_name = "PLATFORM", requires = "roster")]
    pub export: Option<ExportTo>,
    /// Maps course ids to the platform's: a CSV with the header
    /// student,name,lms_id,sis_user_id,sis_login_id,section,email (only student is required; Canvas reads
    /// lms_id, its user id, Moodle reads email).
    #[arg(long, value_name = "FILE")]
    pub roster: Option<PathBuf>,
    /// The assignment's column in the export; for Canvas, its name and id as Canvas writes them
    /// (`Workshop (4821)`).
    #[arg(long, value_name = "NAME", default_value = "Workshop")]
    pub assignment: String,
    /// Regrade this one entry into the existing OUT/gradebook.json and rewrite the gradebook (atomically);
    /// the other entries and their feedback pages stay as they are. Overrides apply as in a full run.
    #[arg(long, value_name = "STUDENT", conflicts_with = "resume")]
    pub only: Option<String>,
    /// Finish an interrupted run: the entries recorded in OUT/gradebook.progress.jsonl (written as each
    /// entry is graded) are kept, the others graded.
    #[arg(long)]
    pub resume: bool,
    /// Skip the similarity report (OUT/similarity.md and the gradebook's similarity column).
    #[arg(long)]
    pub no_similarity: bool,
    /// With --run-tests started as root: the unprivileged user the test binaries run as (a name, or
    /// UID:GID), each in a copy of the learner's package in a 0700 folder of its own; default nobody. A user
    /// of its own is better: useradd --system --no-create-home --shell /usr/sbin/nologin course-tests.
    #[arg(long, value_name = "USER", requires = "run_tests")]
    pub test_user: Option<String>,
}

/// The learning platform `--export` writes for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportTo {
    Canvas,
    Moodle,
}
