//! Exercise 1: Name the question. Six scenarios, each answered by a benchmark or by a profile.
//!
//! The scenarios are the quiz of the chapter "Name the question first"
//! (book/src/quizzes/name-the-question.toml), read from the file itself: the book, this
//! program and the grader share one question bank.
//!
//! TODO (you): answer the six scenarios. Run this program in a terminal to be asked one at a
//! time (it writes answers.toml), or edit answers.toml by hand; then `course check 1`.

use grader::quiz_terminal;

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

const QUIZ: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../book/src/quizzes/name-the-question.toml");

#[derive(Parser)]
#[command(
    about = "Exercise 1: Name the question. Asks six scenarios (benchmark or profile?) and writes your answers to answers.toml",
    long_about = "Exercise 1: Name the question.\n\n\
        Shows the six scenarios of the chapter \"Name the question first\" one at a time and asks, for each, \
        whether a Benchmark or a Profile answers it. Your answers are written to this exercise's answers.toml \
        (its comments are kept); grade them with `course check 1`.\n\n\
        Without a terminal (standard input not a TTY) it prints the scenarios and explains how to fill \
        answers.toml by hand."
)]
struct Args {
    /// The exercise folder whose answers.toml receives the answers [default: this exercise's folder].
    #[arg(long, value_name = "DIR")]
    exercise_dir: Option<PathBuf>,
    /// The quiz file to ask [default: the book's name-the-question.toml].
    #[arg(long, value_name = "FILE")]
    quiz: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let dir = args.exercise_dir.unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    // Shown in messages: the path without the ../.. that leads from this package to the book.
    let quiz = args.quiz.unwrap_or_else(|| std::fs::canonicalize(QUIZ).unwrap_or_else(|_| PathBuf::from(QUIZ)));
    match quiz_terminal::run(&quiz, &dir.join("answers.toml"), "course check 1") {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
