//! `course reset N`: restore the exercise's starting files, after asking. The starting files
//! are those of the last commit of the learner's clone (`git checkout HEAD -- DIR`); measured
//! results (ignored by git) are kept. Without git, only answers.toml can be restored, from the
//! template in exercises/info.toml.

use super::Course;
use anyhow::{bail, Context, Result};
use std::io::IsTerminal;
use std::process::{Command, ExitCode};

pub fn reset(course: &Course, n: u32, yes: bool) -> Result<ExitCode> {
    let exercise = course.exercise(n)?;
    let in_git = Command::new("git")
        .current_dir(&course.root)
        .args(["rev-parse", "--verify", "--quiet", "HEAD"])
        .output()
        .is_ok_and(|o| o.status.success());
    let what = if in_git {
        let changed = Command::new("git")
            .current_dir(&course.root)
            .args(["status", "--porcelain", "--", &exercise.dir])
            .output()
            .context("cannot run git")?;
        let changed = String::from_utf8_lossy(&changed.stdout).to_string();
        if changed.trim().is_empty() {
            println!("{} already has its starting files.", exercise.dir);
            return Ok(ExitCode::SUCCESS);
        }
        format!(
            "These files in {} will go back to their starting state:\n{changed}",
            exercise.dir
        )
    } else {
        format!(
            "This is not a git clone: only {}/answers.toml can be restored (from the template).\n",
            exercise.dir
        )
    };
    print!("{what}");
    if !yes {
        if !std::io::stdin().is_terminal() {
            bail!("reset asks before it overwrites your work; pass --yes to reset without asking");
        }
        if !crate::term::confirm(&format!("Reset exercise {n}?"))? {
            println!("Nothing changed.");
            return Ok(ExitCode::SUCCESS);
        }
    }
    if in_git {
        let status = Command::new("git")
            .current_dir(&course.root)
            .args(["checkout", "HEAD", "--", &exercise.dir])
            .status()
            .context("cannot run git")?;
        if !status.success() {
            bail!(
                "git could not restore {}; see its message above",
                exercise.dir
            );
        }
    } else {
        let path = course.path(&exercise.dir).join("answers.toml");
        output::write_file(
            &path,
            exercise.answers_template.trim_start().as_bytes(),
            output::Flush::ToDisk,
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut progress = course.progress()?;
    progress.exercise_mut(n).passed = false;
    course.save_progress(&progress)?;
    println!("Exercise {n} is back at its start.");
    Ok(ExitCode::SUCCESS)
}
