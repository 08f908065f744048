//! Exercise 4's last steps, the ladder of fewer bytes: the weights of the `matmul` and `lm_head`
//! rows stored in bf16 (`[bytes]`: half the bytes of f32), then in q8_0 (`[quantized]`:
//! llama.cpp's 8-bit type, 8.5 bits a weight with its block's scale). What the exercise's
//! program shows the learner to predict from (the two rows' roofline columns in their own
//! exercise-3 profile) and the commands that measure each rung (`--dtype bf16`, then
//! `--dtype q8_0`, which quantizes GPT-2's matrices at load); `course check 4` grades
//! each prediction against the same rows ([`ROWS`]), by the arithmetic below ([`row_cut`]),
//! which the reference solution answers with.
//!
//! The prediction is the roofline's own arithmetic, read off the f32 row: at the same % of its
//! roofline, a row takes `roof / new roof` of its time. Storing each weight in `b` bits instead
//! of 32 multiplies its intensity by `k = 32 / b` (the weights are nearly all of the row's
//! bytes), and so its memory roof (`bandwidth × intensity`), while the compute roof (the peak)
//! stays where it is:
//!
//! ```text
//! cut = share × (1 − min(peak, bw × I) / min(peak, bw × k·I))
//! ```
//!
//! A memory-bound row that stays below the ridge point (`peak / bw`) keeps `b / 32` of its time;
//! one that crosses it gains only up to the peak; a compute-bound row gains nothing. A quantized
//! type's `b` is its stored width, the scales' bytes included: q8_0 keeps one f16 scale per 32
//! one-byte codes, 34 bytes per 32 weights, so 8.5 bits and not 8.

use std::fmt::Write;
use std::path::{Component, Path, PathBuf};

use profiler::{DeviceKind, Report, ReportRow};

use crate::plan_rule::{figure, pct};
use crate::results::profile_report::{Bound, ProfileReport, RankedOp};
use crate::text::show;

/// The rows whose weights the fix stores in fewer bytes, in the order their fields are asked.
pub const ROWS: [&str; 2] = ["matmul", "lm_head"];

/// The weight type the predictions start from, and the bits it takes a weight.
pub const FROM_DTYPE: &str = "f32";
pub const FROM_BITS: f64 = 32.0;

/// q8_0's block, as ggml stores it: 32 weights as 32 `i8` codes and one f16 scale.
pub const Q8_0_BLOCK_WEIGHTS: usize = 32;
pub const Q8_0_BLOCK_BYTES: usize = 32 + 2;

/// One rung of the ladder: the type the two rows' weights are stored in, and where its
/// prediction is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rung {
    /// The type's name, as `--dtype`, ggml and reports write it.
    pub dtype: &'static str,
    /// Bits one weight takes as stored, its block's scales included.
    pub bits_per_weight: f64,
    /// Bits of a weight's code alone: the width a prediction that forgets the scales uses
    /// (the same as [`Rung::bits_per_weight`] for a type without scales).
    pub code_bits: f64,
    /// The answers.toml section the prediction goes under.
    pub section: &'static str,
}

/// The first rung: bf16, half of f32's bytes.
pub const BF16: Rung = Rung {
    dtype: "bf16",
    bits_per_weight: 16.0,
    code_bits: 16.0,
    section: "bytes",
};

/// The second rung: q8_0. Graded rather than q4_0 because its codes are whole bytes that need no
/// unpacking, so a row's time is the likeliest to follow its bytes as the prediction assumes;
/// q4_0 is the same arithmetic at 4.5 bits (18 bytes per 32 weights).
pub const Q8_0: Rung = Rung {
    dtype: "q8_0",
    bits_per_weight: (Q8_0_BLOCK_BYTES * 8) as f64 / Q8_0_BLOCK_WEIGHTS as f64,
    code_bits: 8.0,
    section: "quantized",
};

/// The rungs, in the order the exercise climbs them.
pub const RUNGS: [Rung; 2] = [BF16, Q8_0];

/// The question of the quantized rung's stored width, in bits a weight.
pub const WIDTH: &str = "quantized.bits_per_weight";

impl Rung {
    /// How many times a row's intensity grows when its weights leave f32 for this type.
    pub fn factor(&self) -> f64 {
        FROM_BITS / self.bits_per_weight
    }

    /// The field of `row`'s predicted cut (`bytes.matmul_cut_pct`).
    pub fn field(&self, row: &str) -> String {
        format!("{}.{row}_cut_pct", self.section)
    }

    /// The field of the whole step's predicted cut.
    pub fn total(&self) -> String {
        format!("{}.predicted_cut_pct", self.section)
    }

    /// What the rung does to a row, for a question's title: "half its bytes" for bf16.
    pub fn to_a_row(&self) -> String {
        if self.factor() == 2.0 {
            "half its bytes".into()
        } else {
            format!("its weights in {}", self.dtype)
        }
    }

    /// The same type with its scales forgotten: the width a common slip predicts with.
    pub fn without_scales(&self) -> Rung {
        Rung {
            bits_per_weight: self.code_bits,
            ..*self
        }
    }

    /// What the fewer bytes are, in words: "half the bytes" for bf16, the stored width for a
    /// quantized type.
    fn fewer(&self) -> String {
        if self.factor() == 2.0 {
            "half the bytes".into()
        } else if self.code_bits != self.bits_per_weight {
            format!(
                "{} bits a weight instead of {} (its scales' bytes included)",
                show(self.bits_per_weight),
                show(FROM_BITS)
            )
        } else {
            format!(
                "{} bits a weight instead of {}",
                show(self.bits_per_weight),
                show(FROM_BITS)
            )
        }
    }

    /// What the intensity does, in words: "doubles its intensity" for bf16.
    fn grows(&self) -> String {
        if self.factor() == 2.0 {
            "doubles its intensity".into()
        } else {
            format!(
                "multiplies its intensity by {} / {} = {}",
                show(FROM_BITS),
                show(self.bits_per_weight),
                figure(self.factor())
            )
        }
    }

    /// The part of its time a memory-bound row keeps below the ridge, as a fraction in words.
    fn kept_below_ridge(&self) -> String {
        if self.factor() == 2.0 {
            "1/2".into()
        } else {
            format!("{}/{}", show(self.bits_per_weight), show(FROM_BITS))
        }
    }
}

/// What fewer bytes do to one row, at the same % of its roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct RowCut {
    pub row: String,
    /// The row's share of the step, %.
    pub share_pct: f64,
    /// The step-time cut it gives, % of the step.
    pub cut_pct: f64,
    /// Which roof bounds the row before, and after its bytes are cut.
    pub bound: Bound,
    pub bound_after: Bound,
    /// The arithmetic, in a sentence, with the row's own figures.
    pub arithmetic: String,
}

/// The cut of storing `op`'s weights at `rung`'s width: `share × (1 − roof / new roof)` (see the
/// module's doc).
pub fn row_cut(profile: &ProfileReport, op: &RankedOp, rung: &Rung) -> Result<RowCut, String> {
    let (Some(r), Some(c)) = (&op.roofline, &profile.ceilings) else {
        return Err(format!(
            "`{}` has no roofline columns in {} (no work count or no measured ceilings): nothing says what fewer bytes would do to it",
            op.name, profile.file
        ));
    };
    let (peak, bw) = (c.peak_gflops, c.mem_read_gbps);
    let ridge = peak / bw;
    let roof = f64::min(peak, bw * r.intensity);
    let grown = rung.factor() * r.intensity;
    let roof_after = f64::min(peak, bw * grown);
    let kept = roof / roof_after;
    let cut_pct = op.share_pct * (1.0 - kept);
    let bound_after = if bw * grown < peak {
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
    let (fewer, grows) = (rung.fewer(), rung.grows());
    let arithmetic = match (r.bound, bound_after) {
        (Bound::Compute, _) => format!(
            "{head}: it is compute-bound, its roof the {} GFLOP/s peak, which fewer bytes leave where it is: it keeps its time, a 0% cut",
            figure(peak)
        ),
        (Bound::Memory, Bound::Memory) if rung.factor() == 2.0 => format!(
            "{head}: {fewer} {grows} to {}, still below the ridge, so its roof doubles and at the same {} of it \
             the row takes half its time: {} × 1/2 = {} of the step",
            figure(grown),
            pct(r.pct_of_roofline),
            pct(op.share_pct),
            pct(cut_pct)
        ),
        (Bound::Memory, Bound::Memory) => format!(
            "{head}: {fewer} {grows} to {}, still below the ridge, so its roof rises as much and at the same {} of it \
             the row keeps {} of its time: {} × (1 − {}) = {} of the step",
            figure(grown),
            pct(r.pct_of_roofline),
            rung.kept_below_ridge(),
            pct(op.share_pct),
            rung.kept_below_ridge(),
            pct(cut_pct)
        ),
        (Bound::Memory, Bound::Compute) => format!(
            "{head}: {fewer} {grows} to {}, past the ridge, so its roof rises only from {} to the {} GFLOP/s peak \
             and at the same {} of it the row keeps {} / {} of its time: {} × (1 − {}) = {} of the step",
            figure(grown),
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
    Ok(RowCut {
        row: op.name.clone(),
        share_pct: op.share_pct,
        cut_pct,
        bound: r.bound,
        bound_after,
        arithmetic,
    })
}

/// The prediction for each row of [`ROWS`] on `profile` at `rung`, in that order.
pub fn predictions(profile: &ProfileReport, rung: &Rung) -> Vec<Result<RowCut, String>> {
    ROWS.iter()
        .map(|name| match profile.find(name) {
            Some((_, op)) => row_cut(profile, op, rung),
            None => Err(format!("`{name}` is not a row of {}", profile.file)),
        })
        .collect()
}

/// Every answer of the ladder on `profile`, as (field, value): each rung's two rows and their
/// sum, and q8_0's stored width. What the reference solution writes; an error names the row
/// that cannot be predicted.
pub fn answers(profile: &ProfileReport) -> Result<Vec<(String, f64)>, String> {
    let mut out = vec![(WIDTH.to_string(), Q8_0.bits_per_weight)];
    for rung in RUNGS {
        let mut total = 0.0;
        for (name, cut) in ROWS.iter().zip(predictions(profile, &rung)) {
            let cut = cut?;
            total += cut.cut_pct;
            out.push((rung.field(name), cut.cut_pct));
        }
        out.push((rung.total(), total));
    }
    Ok(out)
}

/// What `cargo run -p exercise-4` shows for `[bytes]` and `[quantized]`: the two rows' roofline
/// columns in the learner's profile at `profile_path` (what the predictions are worked from), and
/// the commands that measure each rung into `exercise_dir`'s results, with paths as typed from the current
/// folder. An error names the file that could not be read.
pub fn prediction_inputs(profile_path: &Path, exercise_dir: &Path) -> Result<String, String> {
    let report = Report::read_json(profile_path).map_err(|e| e.to_string())?;
    let mut out = String::from(
        "The memory-traffic fix: the weights of `matmul` and `lm_head` in bf16, half the bytes (answers [bytes]),\n\
         then in q8_0, blocks of 32 one-byte codes and one f16 scale (answers [quantized]).\n",
    );
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
    for name in ROWS {
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
    let _ = writeln!(
        out,
        "  Each row's intensity grows by f32's bits over the new type's: {} / {} for bf16, {} / (q8_0's bits, scales included) for q8_0.",
        FROM_BITS, BF16.bits_per_weight, FROM_BITS
    );
    let here = std::env::current_dir().unwrap_or_default();
    let shown = |p: &Path| typed_from(&here, p);
    let before = shown(profile_path);
    for (rung, then) in [
        (BF16, "Then measure bf16, with the flags you gave exercise 3 (if any):"),
        (
            Q8_0,
            "Then q8_0, with the same flags (the two rows' matrices quantized at load into llama.cpp's blocks):",
        ),
    ] {
        let results = shown(&exercise_dir.join("results").join(rung.dtype));
        let _ = writeln!(out, "  {then}");
        let _ = writeln!(
            out,
            "    cargo run -p gpt2 -- profile --mlp stock --dtype {} --out {results}",
            rung.dtype
        );
        let _ = writeln!(
            out,
            "    cargo run -p gpt2 -- profile --compare {before} {results}/report.json"
        );
    }
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
    fn each_rung_has_its_width_and_its_fields() {
        // q8_0's block: 34 bytes for 32 weights, so 8.5 bits, and 8 without the scale.
        assert_eq!(Q8_0.bits_per_weight, 8.5);
        assert_eq!(Q8_0.without_scales().bits_per_weight, 8.0);
        assert_eq!(BF16.factor(), 2.0);
        assert_eq!(BF16.field("matmul"), "bytes.matmul_cut_pct");
        assert_eq!(Q8_0.total(), "quantized.predicted_cut_pct");
        assert_eq!(WIDTH.split('.').next(), Some(Q8_0.section));
    }

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
