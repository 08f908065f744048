//! Exercise 1: Name the question. Six scenarios, each answered by a benchmark or by a profile,
//! and one line on what decided them.
//!
//! The six are drawn for you, with your learner id (exercises/learner.toml), from the course's
//! graded bank (crates/grader/bank/routing.toml), and their options come in your own order;
//! `course check 1` draws the same six when it grades. The chapter's quiz ("Name the question
//! first") is practice with other scenarios.
//!
//! Solution: the program is the exercise's; the answers are in this folder's answers.toml,
//! which answers every scenario of the bank, so it passes whichever six an id draws.

use clap::Parser;
use course_model::exercise;
use course_model::quiz_terminal;
use std::process::ExitCode;

const NUMBER: u32 = 1;

#[derive(Parser)]
#[command(
    about = "Exercise 1: Name the question. Asks your six scenarios (benchmark or profile?) and writes your answers to answers.toml",
    long_about = "Exercise 1: Name the question.\n\n\
        Shows your six scenarios one at a time and asks, for each, whether a Benchmark or a Profile answers it; \
        then one line on what decided them. The scenarios are drawn for you from the course's bank with your \
        learner id, asked for first if exercises/learner.toml holds none yet (or set with `course id NAME`), so `course check 1` grades the same ones. \
        Your answers are written to this exercise's answers.toml (its comments are kept).\n\n\
        Without a terminal (standard input not a TTY) it needs the learner id first (`course id NAME`), then \
        prints the scenarios with their ids and explains how to fill answers.toml by hand."
)]
struct Args {}

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), |_: Args, dir| {
        quiz_terminal::run_exercise(dir, NUMBER)
    })
}
