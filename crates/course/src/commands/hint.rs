//! `course hint N`: hints revealed one at a time; the count is kept in the progress file.

use super::Course;
use anyhow::Result;
use std::process::ExitCode;

pub fn hint(course: &Course, n: u32) -> Result<ExitCode> {
    let exercise = course.exercise(n)?;
    let mut progress = course.progress()?;
    let total = exercise.hints.len();
    let entry = progress.exercise_mut(n);
    let already = entry.hints_revealed.min(total);
    let revealed = (already + 1).min(total);
    entry.hints_revealed = revealed;
    course.save_progress(&progress)?;
    for (i, hint) in exercise.hints.iter().take(revealed).enumerate() {
        println!("Hint {} of {total}: {hint}\n", i + 1);
    }
    if already == total {
        println!(
            "That is every hint for exercise {n}. The chapter {} has the rest.",
            exercise.chapter
        );
    } else if revealed < total {
        println!("Run `course hint {n}` again for the next one.");
    }
    Ok(ExitCode::SUCCESS)
}
