//! The ceiling rule on the budget lines of the learner's profile: a line saves at most its share.

use crate::TARGET_PCT;
use anyhow::{Context, Result};
use bench::budget::from_report;
use profiler::Report;
use std::path::Path;

/// Prints the lines of `report` with the most each can save, writes them to `path`
/// (results/budget.json, which `course check 4` reads) and says plainly whether any single line
/// can give the cut asked for.
pub(crate) fn write(report: &Report, path: &Path) -> Result<()> {
    let budget = from_report(report, "your profile")?;
    println!("\nYour profile as a budget ({}):", budget.title);
    println!(
        "  {:<28} {:>8} {:>18}",
        "line", "share", "the most it saves"
    );
    for line in &budget.lines {
        println!(
            "  {:<28} {:>7.2}% {:>17.2}%",
            line.line.name(),
            line.share_pct,
            line.share_pct
        );
    }
    let largest = budget
        .lines
        .iter()
        .max_by(|a, b| a.share_pct.total_cmp(&b.share_pct));
    match largest {
        Some(l) if l.share_pct >= TARGET_PCT => {
            let able: Vec<&str> = budget
                .lines
                .iter()
                .filter(|l| l.share_pct >= TARGET_PCT)
                .map(|l| l.line.name())
                .collect();
            println!(
                "A {TARGET_PCT}% cut can come from one line: {} (a fix must still remove that much of it).",
                able.join(", ")
            );
        }
        Some(l) => println!(
            "No single line can give {TARGET_PCT}% of this step: the largest, \"{}\", has only {:.2}%. A {TARGET_PCT}% cut needs fixes on several lines.",
            l.line.name(),
            l.share_pct
        ),
        None => {}
    }
    let lines: Vec<serde_json::Value> = budget
        .lines
        .iter()
        .map(|l| serde_json::json!({"line": l.line.name(), "ms": l.ms, "share_pct": l.share_pct, "ops": l.ops}))
        .collect();
    let json = serde_json::json!({"schema": "budget-lines/1", "profile": "../exercise-3/results/report.json", "step_ms": budget.step_ms, "lines": lines});
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, serde_json::to_string_pretty(&json)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {} (graded by `course check 4`)", path.display());
    Ok(())
}
