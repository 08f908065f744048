//! Exercise 6: Check yourself. Three multiple-choice questions on serving decisions, then the
//! Check-yourself page's four questions, each answered in a sentence or two and graded for its
//! ideas.
//!
//! The three are drawn for you, with your learner id (exercises/learner.toml, asked for first
//! if there is none yet), from the course's graded bank
//! (crates/grader/bank/check-yourself.toml), and their options come in your own order;
//! `course check 6` draws the same ones when it grades. The chapter's quiz ("Check yourself")
//! is practice: multiple-choice versions of the four, with their answers shown.
//!
//! Solution: the program is the exercise's; the answers are in this folder's answers.toml,
//! which answers every question of the bank, so it passes whichever three an id draws.

use clap::Parser;
use course_model::exercise;
use course_model::quiz_terminal;
use std::process::ExitCode;

const NUMBER: u32 = 6;

#[derive(Parser)]
#[command(
    about = "Exercise 6: Check yourself. Asks your seven check-yourself questions and writes your answers to answers.toml",
    long_about = "Exercise 6: Check yourself.\n\n\
        Asks your seven questions one at a time: for a multiple-choice question, type the number of the option \
        you choose; for a written one, your decision first, then why, in one or two sentences. The multiple-choice \
        questions are drawn for you from the course's bank with your learner id, asked for first if \
        exercises/learner.toml holds none yet (or set with `course id NAME`), so `course check 6` grades the same ones. \
        Your answers are written to this exercise's answers.toml (its comments are kept).\n\n\
        Without a terminal (standard input not a TTY) it needs the learner id first (`course id NAME`), then \
        prints the questions with their ids and explains how to fill answers.toml by hand."
)]
struct Args {}

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), |_: Args, dir| {
        quiz_terminal::run_exercise(dir, NUMBER)
    })
}
