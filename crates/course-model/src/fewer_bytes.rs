//! Exercise 4's last step, `[bytes]`: storing the weights of the `matmul` and `lm_head` rows in
//! half the bytes (bf16). What the exercise's program shows the learner to predict from (the
//! two rows' roofline columns in their own exercise-3 profile) and the commands that measure the
//! fix; `course check 4` grades the prediction against the same rows ([`ROWS`]), by the
//! arithmetic below ([`half_bytes`]), which the reference solution answers with.
//!
//! The prediction is the roofline's own arithmetic, read off the f32 row: at the same % of its
//! roofline, a row takes `roof / new roof` of its time, where half the bytes doubles its
//! intensity and so its memory roof (`bandwidth × intensity`), and the compute roof (the peak)
//! stays where it is:
//!
//! ```text
//! cut = share × (1 − min(peak, bw × I) / min(peak, bw × 2I))
//! ```
//!
//! A memory-bound row that stays below the ridge point (`peak / bw`) halves; one that crosses it
//! gains only up to the peak; a compute-bound row gains nothing.

use std::fmt::Write;
use std::path::{Component, Path, PathBuf};

use profiler::{DeviceKind, Report, ReportRow};

use crate::plan_rule::{figure, pct};
use crate::results::profile_report::{Bound, ProfileReport, RankedOp};

/// The rows whose weights the fix stores in half the bytes, with their `[bytes]` fields.
pub const ROWS: [(&str, &str); 2] = [
    ("matmul", "bytes.matmul_cut_pct"),
    ("lm_head", "bytes.lm_head_cut_pct"),
];

/// The weight type the prediction starts from.
pub const FROM_DTYPE: &str = "f32";

/// The whole step's predicted cut: the rows' cuts added.
pub const TOTAL: &str = "bytes.predicted_cut_pct";

/// What half the bytes does to one row, at the same % of its roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct HalfBytes {
    pub row: String,
    /// The row's share of the step, %.
    pub share_pct: f64,
    /// The step-time cut it gives, % of the step.
    pub cut_pct: f64,
    /// Which roof bounds the row before, and after its bytes are halved.
    pub bound: Bound,
    pub bound_after: Bound,
    /// The arithmetic, in a sentence, with the row's own figures.
    pub arithmetic: String,
}

/// The cut of halving `op`'s bytes: `share × (1 − roof / new roof)` (see the module's doc).
pub fn half_bytes(profile: &ProfileReport, op: &RankedOp) -> Result<HalfBytes, String> {
    let (Some(r), Some(c)) = (&op.roofline, &profile.ceilings) else {
        return Err(format!(
            "`{}` has no roofline columns in {} (no work count or no measured ceilings): nothing says what fewer bytes would do to it",
            op.name, profile.file
        ));
    };
    let (peak, bw) = (c.peak_gflops, c.mem_read_gbps);
    let ridge = peak / bw;
    let roof = f64::min(peak, bw * r.intensity);
    let doubled = 2.0 * r.intensity;
    let roof_after = f64::min(peak, bw * doubled);
    let kept = roof / roof_after;
    let cut_pct = op.share_pct * (1.0 - kept);
    let bound_after = if bw * doubled < peak {
        Bound::Memory
    } else {
        Bound::Compute
    };
    let head = format!(
        "`{}` has {} of the step at {} FLOP/byte, with the ridge at {} / {} = {} FLOP/byte",
        op.name,
        pct(op.share_pct),
        figure(r.intensity),
        figure(peak),
        figure(bw),
        figure(ridge)
    );
    let arithmetic = match (r.bound, bound_after) {
        (Bound::Compute, _) => format!(
            "{head}: it is compute-bound, its roof the {} GFLOP/s peak, which fewer bytes leave where it is: it keeps its time, a 0% cut",
            figure(peak)
        ),
        (Bound::Memory, Bound::Memory) => format!(
            "{head}: half the bytes doubles its intensity to {}, still below the ridge, so its roof doubles and at the same {} of it \
             the row takes half its time: {} × 1/2 = {} of the step",
            figure(doubled),
            pct(r.pct_of_roofline),
            pct(op.share_pct),
            pct(cut_pct)
        ),
        (Bound::Memory, Bound::Compute) => format!(
            "{head}: half the bytes doubles its intensity to {}, past the ridge, so its roof rises only from {} to the {} GFLOP/s peak \
             and at the same {} of it the row keeps {} / {} of its time: {} × (1 − {}) = {} of the step",
            figure(doubled),
            figure(roof),
            figure(peak),
            pct(r.pct_of_roofline),
            figure(roof),
            figure(peak),
            pct(op.share_pct),
            figure(kept),
            pct(cut_pct)
        ),
    };
    Ok(HalfBytes {
        row: op.name.clone(),
        share_pct: op.share_pct,
        cut_pct,
        bound: r.bound,
        bound_after,
        arithmetic,
    })
}

/// The prediction for each row of [`ROWS`] on `profile`, in that order.
pub fn predictions(profile: &ProfileReport) -> Vec<Result<HalfBytes, String>> {
    ROWS.iter()
        .map(|(name, _)| match profile.find(name) {
            Some((_, op)) => half_bytes(profile, op),
            None => Err(format!("`{name}` is not a row of {}", profile.file)),
        })
        .collect()
}

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
