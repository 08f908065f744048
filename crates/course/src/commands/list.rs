//! `course list`: the progress table.

use super::Course;
use anyhow::Result;
use grader::question_types::number::show;
use std::process::ExitCode;

pub fn list(course: &Course) -> Result<ExitCode> {
    let progress = course.progress()?;
    let current = course.current(&progress);
    let width = course
        .manifest
        .exercises
        .iter()
        .map(|e| e.title.chars().count())
        .max()
        .unwrap_or(8);
    println!(
        "  {:>2}  {:<width$}  {:<7}  {:>5}  {:>5}  chapter",
        "#", "exercise", "status", "best", "hints"
    );
    let mut done = 0;
    for e in &course.manifest.exercises {
        let p = progress.exercise(e.number);
        let status = if p.passed {
            done += 1;
            "done"
        } else if p.checks > 0 {
            "tried"
        } else {
            "to do"
        };
        let marker = if e.number == current && !p.passed {
            ">"
        } else {
            " "
        };
        let best = if p.checks > 0 {
            format!("{}%", show(p.best_percent.round()))
        } else {
            "-".to_string()
        };
        let hints = format!("{}/{}", p.hints_revealed, e.hints.len());
        let mut chapter = e.chapter.clone();
        if p.solution_viewed_before_pass {
            chapter.push_str("  (solution seen early)");
        }
        println!(
            "{marker} {:>2}  {:<width$}  {:<7}  {:>5}  {:>5}  {chapter}",
            e.number, e.title, status, best, hints
        );
    }
    println!(
        "\n{done} of {} exercises done.",
        course.manifest.exercises.len()
    );
    if done < course.manifest.exercises.len() {
        println!("Next: exercise {current}. Read it in the book, then `course run {current}` and `course check {current}`.");
    }
    Ok(ExitCode::SUCCESS)
}
