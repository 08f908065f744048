//! Exercise 6: Check yourself. The four questions of the chapter "Check yourself": three
//! multiple choice, one short answer graded for its ideas.
//!
//! The questions are read from the chapter's quiz file (book/src/quizzes/check-yourself.toml):
//! the book, this program and the grader share one question bank.
//!
//! TODO (you): answer the four questions. Run this program in a terminal to be asked one at a
//! time (it writes answers.toml), or edit answers.toml by hand; then `course check 6`.

use grader::quiz_terminal;

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

const QUIZ: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../book/src/quizzes/check-yourself.toml");

#[derive(Parser)]
#[command(
    about = "Exercise 6: Check yourself. Asks the four check-yourself questions and writes your answers to answers.toml",
    long_about = "Exercise 6: Check yourself.\n\n\
        Asks the four questions of the chapter \"Check yourself\" one at a time: for a multiple-choice question, \
        type the number of the option you choose; for the short answer, write one or two sentences. Your answers \
        are written to this exercise's answers.toml (its comments are kept); grade them with `course check 6`.\n\n\
        Without a terminal (standard input not a TTY) it prints the questions and explains how to fill \
        answers.toml by hand."
)]
struct Args {
    /// The exercise folder whose answers.toml receives the answers [default: this exercise's folder].
    #[arg(long, value_name = "DIR")]
    exercise_dir: Option<PathBuf>,
    /// The quiz file to ask [default: the book's check-yourself.toml].
    #[arg(long, value_name = "FILE")]
    quiz: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let dir = args.exercise_dir.unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    // Shown in messages: the path without the ../.. that leads from this package to the book.
    let quiz = args.quiz.unwrap_or_else(|| std::fs::canonicalize(QUIZ).unwrap_or_else(|_| PathBuf::from(QUIZ)));
    match quiz_terminal::run(&quiz, &dir.join("answers.toml"), "course check 6") {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
