//! Exercise 4's last step, `[bytes]`: storing the weights of the `matmul` and `lm_head` rows in
//! half the bytes (bf16). What the exercise's program shows the learner to predict from (the
//! two rows' roofline columns in their own exercise-3 profile) and the commands that measure the
//! fix; `course check 4` grades the prediction against the same rows ([`ROWS`]).

use std::fmt::Write;
use std::path::{Component, Path, PathBuf};

use profiler::{DeviceKind, Report, ReportRow};

/// The rows whose weights the fix stores in half the bytes, with their `[bytes]` fields.
pub const ROWS: [(&str, &str); 2] = [
    ("matmul", "bytes.matmul_cut_pct"),
    ("lm_head", "bytes.lm_head_cut_pct"),
];

/// The weight type the prediction starts from.
pub const FROM_DTYPE: &str = "f32";

/// What `cargo run -p exercise-4` shows for `[bytes]`: the two rows' roofline columns in the
/// learner's profile at `profile_path` (what the prediction is worked from), and the commands
/// that measure the fix into `exercise_dir`'s results, with paths as typed from the current
/// folder. An error names the file that could not be read.
pub fn prediction_inputs(profile_path: &Path, exercise_dir: &Path) -> Result<String, String> {
    let report = Report::read_json(profile_path).map_err(|e| e.to_string())?;
    let mut out = String::from("The memory-traffic fix: the weights of `matmul` and `lm_head` in bf16, half the bytes (answers [bytes]).\n");
    let dtype = report.environment.dtype.as_str();
    if dtype != FROM_DTYPE && dtype != "unknown" {
        let _ = writeln!(out, "  Your profile ran with {dtype} weights: predict from an f32 profile (`course run 3` without --dtype).");
    }
    let Some(c) = &report.ceilings else {
        out.push_str("  Your profile has no measured ceilings, so no roofline columns to predict from: profile again (`course run 3`).\n");
        return Ok(out);
    };
    let _ = writeln!(
        out,
        "  This machine's ceilings: {:.1} GB/s read, {:.1} GFLOP/s peak; the ridge at {:.2} FLOP/byte.",
        c.mem_read_gbps,
        c.peak_gflops,
        c.peak_gflops / c.mem_read_gbps
    );
    let _ = writeln!(
        out,
        "  {:<10} {:>8} {:>10} {:>14} {:>14} {:>8}",
        "row", "share", "FLOP/byte", "roof GFLOP/s", "% of roofline", "bound"
    );
    for (name, _) in ROWS {
        let _ = match find(&report, name) {
            Some(op) => {
                let share = share_pct(&report, op);
                match &op.roofline {
                    Some(r) => writeln!(
                        out,
                        "  {:<10} {:>7.2}% {:>10.2} {:>14.2} {:>13.2}% {:>8}",
                        op.name,
                        share,
                        r.intensity,
                        r.roofline_gflops_per_s,
                        r.pct_of_roofline,
                        r.bound.to_string()
                    ),
                    None => writeln!(
                        out,
                        "  {:<10} {:>7.2}%   (no roofline columns)",
                        op.name, share
                    ),
                }
            }
            None => writeln!(out, "  {name:<10} (not a row of your profile)"),
        };
    }
    let here = std::env::current_dir().unwrap_or_default();
    let shown = |p: &Path| typed_from(&here, p);
    let results = shown(&exercise_dir.join("results/bf16"));
    out.push_str("  Then measure it, with the flags you gave exercise 3 (if any):\n");
    let _ = writeln!(
        out,
        "    cargo run -p gpt2 -- profile --mlp stock --dtype bf16 --out {results}"
    );
    let _ = writeln!(
        out,
        "    cargo run -p gpt2 -- profile --compare {} {results}/report.json",
        shown(profile_path)
    );
    Ok(out)
}

/// The first row named `name` (ignoring case, spaces and backticks).
fn find<'r>(report: &'r Report, name: &str) -> Option<&'r ReportRow> {
    let key = |n: &str| n.trim().trim_matches('`').trim().to_lowercase();
    let wanted = key(name);
    report.rows.iter().find(|r| key(&r.name) == wanted)
}

/// A row's share of the step in the column its device is ranked by.
fn share_pct(report: &Report, row: &ReportRow) -> f64 {
    match report.device {
        DeviceKind::Cuda => row.self_cuda_pct.unwrap_or(0.0),
        DeviceKind::Cpu => row.self_cpu_pct,
    }
}

/// `path` as typed from `here`: `exercise-4/../exercise-3` as `exercise-3`, and relative to
/// `here` where it lies below it.
fn typed_from(here: &Path, path: &Path) -> String {
    let mut tidy = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir if tidy.file_name().is_some() => {
                tidy.pop();
            }
            other => tidy.push(other),
        }
    }
    tidy.strip_prefix(here)
        .map(|p| p.to_path_buf())
        .unwrap_or(tidy)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_as_typed_from_here() {
        let here = Path::new("/course");
        assert_eq!(
            typed_from(
                here,
                Path::new("/course/exercises/exercise-4/../exercise-3/results")
            ),
            "exercises/exercise-3/results"
        );
        assert_eq!(typed_from(here, Path::new("/elsewhere/x")), "/elsewhere/x");
    }
}
