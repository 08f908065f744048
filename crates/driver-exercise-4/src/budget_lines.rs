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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_written_are_the_profiles_whole_step() {
        // A recorded exercise-3 profile (the grader's fixture), grouped and written.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let fixture = root.join("crates/grader/tests/fixtures/reports/ex4-cpu-f32.json");
        let report = Report::read_json(&fixture).unwrap();
        let dir = std::env::temp_dir().join(format!("driver-exercise-4-{}", std::process::id()));
        let path = dir.join("results/budget.json");
        write(&report, &path).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();

        assert_eq!(json["schema"], "budget-lines/1");
        let lines = json["lines"].as_array().unwrap();
        assert!(!lines.is_empty());
        let shares: f64 = lines.iter().map(|l| l["share_pct"].as_f64().unwrap()).sum();
        assert!(
            (shares - 100.0).abs() < 1e-6,
            "the lines' shares add up to {shares}%"
        );
        let ms: f64 = lines.iter().map(|l| l["ms"].as_f64().unwrap()).sum();
        let step_ms = json["step_ms"].as_f64().unwrap();
        assert!(
            (ms - step_ms).abs() < 1e-6 * step_ms,
            "{ms} ms of lines, a {step_ms} ms step"
        );
        // Every row of the profile is in exactly one line.
        let ops: usize = lines
            .iter()
            .map(|l| l["ops"].as_array().unwrap().len())
            .sum();
        assert_eq!(ops, report.rows.len());
    }
}
