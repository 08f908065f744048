//! Exercise 4's command line.

use clap::Parser;
use std::path::PathBuf;

/// Exercise 4's command line: how much of an op a fix removes, which op to show, and which
/// profile to read.
#[derive(Parser)]
#[command(
    about = "Exercise 4: apply your savings arithmetic to your illustrative step and to your exercise-3 profile",
    long_about = "Exercise 4: Read a profile as a budget.\n\n\
        Prints your own illustrative decode step as a budget (not measured; drawn from your learner id in \
        exercises/learner.toml, which `course run 4` asks for, or COURSE_LEARNER_ID) and what removing the part \
        of its activations line it names saves, computed with your functions in src/budget.rs. Then reads your own profile \
        (exercise-3/results/report.json, written by `course run 3`) and prints, for its top ops, the share, the \
        ceiling of any saving and the saving if your fix removed --fraction of the op; then groups it into the \
        chapter's budget lines (results/budget.json) with the most each line can save, and says whether any \
        single line can give a 10% cut.\n\n\
        Then fill in answers.toml and run `course check 4`."
)]
pub struct Args {
    /// The fraction of an op's time your fix would remove, 0 to 1.
    #[arg(long, default_value_t = 2.0 / 3.0)]
    pub fraction: f64,
    /// The op you would attack (its row name in your profile); shown in detail.
    #[arg(long)]
    pub op: Option<String>,
    /// Rows of your profile to show.
    #[arg(long, default_value_t = 8)]
    pub rows: usize,
    /// Your profile [default: exercise-3/results/report.json next to this exercise].
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
}
