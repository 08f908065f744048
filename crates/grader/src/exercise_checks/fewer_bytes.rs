//! Exercise 4's last steps, the ladder of fewer bytes. From the learner's own f32 profile
//! (exercise 3's report.json) they predict the step-time cut of storing the weights of the
//! `matmul` and `lm_head` rows in bf16 (`[bytes]`: half the bytes), then profile again with
//! `--dtype bf16` and compare; and then the same rows in q8_0 (`[quantized]`: 8.5 bits a weight,
//! its block's scale included), with that stored width asked on its own.
//!
//! Each prediction is the roofline's own arithmetic, read off the f32 row: at the same % of its
//! roofline, a row takes `roof / new roof` of its time, where `b` bits a weight instead of 32
//! multiplies its intensity by `k = 32 / b`, and so its memory roof (`bandwidth × intensity`),
//! and the compute roof (the peak) stays where it is:
//!
//! ```text
//! cut = share × (1 − min(peak, bw × I) / min(peak, bw × k·I))
//! ```
//!
//! A memory-bound row that stays below the ridge point (`peak / bw`) keeps `b / 32` of its time;
//! one that crosses it gains only up to the peak; a compute-bound row gains nothing. What is
//! graded is that arithmetic on the learner's columns, never the measured outcome (which depends
//! on the machine and the kernels). Each rung's measured cut, where the learner ran its profile
//! (`--dtype bf16`, `--dtype q8_0`: GPT-2's matrices quantized at load), is shown beside its
//! prediction in a note, with what the two profiles say about the gap.

use super::{Ctx, Got, NOT_ANSWERED};
use crate::key::BudgetKey;
use crate::plan_rule::{figure, pct};
use crate::question_types::number::{show, within};
use crate::report::QuestionResult;
use crate::results::profile_report::{Bound, ProfileReport, RankedOp};
use course_model::fewer_bytes::{
    predictions, RowCut, Rung, BF16, FROM_BITS, FROM_DTYPE, Q8_0, Q8_0_BLOCK_BYTES,
    Q8_0_BLOCK_WEIGHTS, ROWS, WIDTH,
};

/// The results role of the profile run with half-type weights (results/bf16/report.json).
pub const MEASURED_ROLE: &str = "profile_bf16";

/// The results role of the profile run with q8_0 weights (results/q8_0/report.json).
pub const MEASURED_Q8_0_ROLE: &str = "profile_q8_0";

/// The results role of `rung`'s measured profile.
fn measured_role(rung: &Rung) -> &'static str {
    if *rung == BF16 {
        MEASURED_ROLE
    } else {
        MEASURED_Q8_0_ROLE
    }
}

/// How close a stored width must be, in bits a weight: 8.5 is exact, and 8 is the slip.
const WIDTH_TOLERANCE_BITS: f64 = 0.05;

/// Why the profile cannot be predicted from, if it cannot: it must have run with f32 weights.
fn not_f32(profile: &ProfileReport) -> Option<String> {
    match profile.dtype.as_deref() {
        Some(d) if d != FROM_DTYPE => Some(format!(
            "{} ran with {d} weights: the prediction starts from the f32 profile; run exercise 3 again without --dtype \
             (`course run 3`; f32 is its default)",
            profile.file
        )),
        _ => None,
    }
}

/// `[bytes]` and `[quantized]`: each rung's two rows' cuts and their sum, graded against the
/// arithmetic on `profile`, and q8_0's stored width.
pub fn check(ctx: &mut Ctx<'_>, key: &BudgetKey, profile: &Result<ProfileReport, String>) {
    let bf16 = rung_check(ctx, key, profile, &BF16);
    width_question(ctx);
    let q8_0 = rung_check(ctx, key, profile, &Q8_0);
    if let Ok(p) = profile {
        if not_f32(p).is_none() {
            measured_note(ctx, p, &bf16, &BF16);
            measured_note(ctx, p, &q8_0, &Q8_0);
        }
    }
}

/// One rung's three questions; its predictions, for the note.
fn rung_check(
    ctx: &mut Ctx<'_>,
    key: &BudgetKey,
    profile: &Result<ProfileReport, String>,
    rung: &Rung,
) -> Vec<Result<RowCut, String>> {
    let cuts = |rung: &Rung| -> Vec<Result<RowCut, String>> {
        match profile {
            Ok(p) => match not_f32(p) {
                Some(why) => vec![Err(why); ROWS.len()],
                None => predictions(p, rung),
            },
            Err(reason) => vec![Err(reason.clone()); ROWS.len()],
        }
    };
    let predicted = cuts(rung);
    // What the same arithmetic gives with the scales forgotten: a slip named when it is made.
    let forgetting = (rung.code_bits != rung.bits_per_weight).then(|| cuts(&rung.without_scales()));
    let tolerance = key.share_tolerance_pct;
    for (i, (name, expected)) in ROWS.iter().zip(&predicted).enumerate() {
        let field = rung.field(name);
        let got = ctx.number(&field);
        let q = QuestionResult::new(
            field.as_str(),
            format!(
                "The step-time cut from `{name}` with {}, %",
                rung.to_a_row()
            ),
            1.0,
        );
        let slip = forgetting
            .as_ref()
            .and_then(|f| f[i].as_ref().ok().map(|c| c.cut_pct));
        ctx.push(row_question(q, got, expected, rung, slip, tolerance));
    }
    let total = rung.total();
    let got = ctx.number(&total);
    let q = QuestionResult::new(
        total.as_str(),
        if *rung == BF16 {
            "The whole step's predicted cut, %".to_string()
        } else {
            format!("The whole step's predicted cut in {}, %", rung.dtype)
        },
        1.0,
    );
    let slip = forgetting.as_ref().and_then(|f| {
        f.iter()
            .map(|c| c.as_ref().ok().map(|c| c.cut_pct))
            .sum::<Option<f64>>()
    });
    ctx.push(total_question(q, got, &predicted, rung, slip, tolerance));
    predicted
}

/// `quantized.bits_per_weight`: q8_0's stored width, its scale's bytes included.
fn width_question(ctx: &mut Ctx<'_>) {
    let got = ctx.number(WIDTH);
    let q = QuestionResult::new(
        WIDTH,
        "The bits a q8_0 weight takes as stored, its block's scale included",
        1.0,
    );
    let given = match got {
        Got::Unanswered => return ctx.push(q.unanswered(NOT_ANSWERED)),
        Got::Invalid(reason) => return ctx.push(q.wrong(reason)),
        Got::Answered(v) => v,
    };
    let q = q.answer(show(given));
    let block = format!(
        "A q8_0 block stores {Q8_0_BLOCK_WEIGHTS} weights as {Q8_0_BLOCK_WEIGHTS} one-byte codes and one f16 scale, \
         {Q8_0_BLOCK_BYTES} bytes: {Q8_0_BLOCK_BYTES} × 8 / {Q8_0_BLOCK_WEIGHTS} = {} bits a weight",
        show(Q8_0.bits_per_weight)
    );
    let result = if within(given, Q8_0.bits_per_weight, WIDTH_TOLERANCE_BITS, 0.0) {
        q.right(block)
    } else if within(given, Q8_0.code_bits, WIDTH_TOLERANCE_BITS, 0.0) {
        q.wrong(format!(
            "{} bits is the code alone: the scales' bytes are read too. {block}",
            show(given)
        ))
    } else if within(given, Q8_0_BLOCK_BYTES as f64, WIDTH_TOLERANCE_BITS, 0.0) {
        q.wrong(format!(
            "{} is the block's bytes, not a weight's bits. {block}",
            show(given)
        ))
    } else {
        q.wrong(block)
    };
    ctx.push(result);
}

fn row_question(
    q: QuestionResult,
    got: Got<f64>,
    expected: &Result<RowCut, String>,
    rung: &Rung,
    without_scales: Option<f64>,
    tolerance: f64,
) -> QuestionResult {
    let given = match got {
        Got::Unanswered => return q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => return q.wrong(reason),
        Got::Answered(v) => v,
    };
    let q = q.answer(show(given));
    let h = match expected {
        Err(reason) => return q.wrong(reason.clone()),
        Ok(h) => h,
    };
    if within(given, h.cut_pct, tolerance, 0.0) {
        return q.right(h.arithmetic.clone());
    }
    // The most any row can save at this width: all its time on its weights' bytes, below the ridge.
    let most = h.share_pct * (1.0 - rung.bits_per_weight / FROM_BITS);
    let why = if given < -tolerance {
        format!(
            "a negative cut is a slower step, and at the same % of its roofline a row with fewer bytes is never slower. {}",
            h.arithmetic
        )
    } else if given > h.share_pct + tolerance {
        format!("{} is more than the row's whole {} share: a fix saves at most the line it removes time from. {}", pct(given), pct(h.share_pct), h.arithmetic)
    } else if h.bound == Bound::Compute {
        format!(
            "a compute-bound row's time does not follow its bytes. {}",
            h.arithmetic
        )
    } else if let Some(slip) = without_scales.filter(|s| within(given, *s, tolerance, 0.0)) {
        format!(
            "{} is the cut at {} bits a weight, the codes alone: {} also reads each block's scale, {} bits a weight in all. {}",
            pct(slip),
            show(rung.code_bits),
            rung.dtype,
            show(rung.bits_per_weight),
            h.arithmetic
        )
    } else if h.bound_after == Bound::Compute && within(given, most, tolerance, 0.0) {
        let kept = if rung.factor() == 2.0 {
            "half its time".to_string()
        } else {
            format!(
                "{} / {} of its time",
                show(rung.bits_per_weight),
                show(FROM_BITS)
            )
        };
        format!(
            "{kept} holds only while the row stays memory-bound. {}",
            h.arithmetic
        )
    } else if given > most + tolerance {
        format!(
            "{} is more than {}'s bytes allow: a row whose whole time is its weights' bytes keeps {} / {} of it, a cut of at most \
             {} × (1 − {} / {}) = {}. {}",
            pct(given),
            rung.dtype,
            show(rung.bits_per_weight),
            show(FROM_BITS),
            pct(h.share_pct),
            show(rung.bits_per_weight),
            show(FROM_BITS),
            pct(most),
            h.arithmetic
        )
    } else {
        h.arithmetic.clone()
    };
    q.wrong(why)
}

fn total_question(
    q: QuestionResult,
    got: Got<f64>,
    predicted: &[Result<RowCut, String>],
    rung: &Rung,
    without_scales: Option<f64>,
    tolerance: f64,
) -> QuestionResult {
    let given = match got {
        Got::Unanswered => return q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => return q.wrong(reason),
        Got::Answered(v) => v,
    };
    let q = q.answer(show(given));
    let rows: Vec<&RowCut> = match predicted
        .iter()
        .map(|p| p.as_ref())
        .collect::<Result<_, _>>()
    {
        Ok(rows) => rows,
        Err(reason) => return q.wrong(reason.clone()),
    };
    let expected: f64 = rows.iter().map(|h| h.cut_pct).sum();
    let shares: f64 = rows.iter().map(|h| h.share_pct).sum();
    let sum = format!(
        "{} = {}",
        rows.iter()
            .map(|h| format!("{} ({})", pct(h.cut_pct), h.row))
            .collect::<Vec<_>>()
            .join(" + "),
        pct(expected)
    );
    // Two rows' tolerances add up.
    if within(given, expected, tolerance * rows.len() as f64, 0.0) {
        return q.right(format!(
            "{sum}: the step takes {} of its time",
            pct(100.0 - expected)
        ));
    }
    // The whole step cut as if every line were the two rows' weights.
    let whole_step = 100.0 * (1.0 - rung.bits_per_weight / FROM_BITS);
    let why = if within(given, whole_step, tolerance, 0.0) {
        let fewer = if rung.factor() == 2.0 {
            "half the bytes of two rows is not half the step".to_string()
        } else {
            format!(
                "{} of the bytes of two rows is not {} of the step's time",
                pct(whole_step),
                pct(whole_step)
            )
        };
        format!(
            "{fewer}: the rows that keep their bytes keep their time, and each row's own cut \
             follows its roofline: {sum}"
        )
    } else if let Some(slip) = without_scales.filter(|s| within(given, *s, tolerance, 0.0)) {
        format!(
            "{} is the cut at {} bits a weight, the codes alone: {} also reads each block's scale, {} bits a weight in all; {sum}",
            pct(slip),
            show(rung.code_bits),
            rung.dtype,
            show(rung.bits_per_weight)
        )
    } else if given > shares + tolerance {
        format!("{} is more than the two rows hold together ({}): a fix saves at most the lines it removes time from; {sum}", pct(given), pct(shares))
    } else {
        format!("the two rows' cuts add up: {sum}")
    };
    q.wrong(why)
}

/// Where the learner ran `rung`'s profile: the measured cut beside the prediction, and what the
/// two profiles say about the gap. A note, never graded: the outcome depends on the machine and
/// the kernels, the arithmetic does not.
fn measured_note(
    ctx: &mut Ctx<'_>,
    before: &ProfileReport,
    predicted: &[Result<RowCut, String>],
    rung: &Rung,
) {
    let Ok(rows) = predicted
        .iter()
        .map(|p| p.as_ref())
        .collect::<Result<Vec<&RowCut>, _>>()
    else {
        return;
    };
    let expected: f64 = rows.iter().map(|h| h.cut_pct).sum();
    let role = measured_role(rung);
    let half = *rung == BF16;
    if !ctx.has_result(role) {
        let path = ctx.info.result_path(role).unwrap_or_default();
        ctx.report.notes.push(if half {
            format!(
                "Your predicted cut is {}. To measure it, profile again with half-type weights into {path} and compare (the exercise's page \
                 has the commands).",
                pct(expected)
            )
        } else {
            format!(
                "Your predicted {} cut is {}. To measure it, profile again with --dtype {} into {path} and compare (the exercise's page \
                 has the commands).",
                rung.dtype,
                pct(expected),
                rung.dtype
            )
        });
        return;
    }
    let Ok(after) = ctx.profile(role) else {
        return;
    };
    let dtype = after
        .dtype
        .clone()
        .unwrap_or_else(|| "an unstated type".into());
    // The bf16 rung takes either half type; a quantized rung its own type.
    let other_type = if half {
        dtype == FROM_DTYPE
    } else {
        dtype != rung.dtype
    };
    if after.device != before.device || other_type {
        let run = if half { "half-type" } else { rung.dtype };
        ctx.report.notes.push(format!(
            "{} is not the {run} run of your profile ({} with {dtype} weights, against {} with f32): profile again with --dtype {} \
             on the same device",
            after.file,
            after.device.name(),
            before.device.name(),
            rung.dtype
        ));
        return;
    }
    let (step_before, step_after) = (before.step_us() / 1e3, after.step_us() / 1e3);
    let mut lines = vec![format!(
        "Measured with {dtype} weights ({}): one step went from {} to {} ms, a {} cut, against your predicted {}.",
        after.file,
        figure(step_before),
        figure(step_after),
        pct(100.0 * (1.0 - step_after / step_before)),
        pct(expected)
    )];
    let (mut rows_before, mut rows_after) = (0.0, 0.0);
    for h in &rows {
        let (Some(b), Some(a)) = (before.row(&h.row), after.row(&h.row)) else {
            continue;
        };
        let (ms_before, ms_after) = (
            before.per_step_us(b.self_us) / 1e3,
            after.per_step_us(a.self_us) / 1e3,
        );
        rows_before += ms_before;
        rows_after += ms_after;
        lines.push(row_gap(
            h,
            (before, &after),
            b,
            a,
            ms_before,
            ms_after,
            rung,
        ));
    }
    lines.push(format!(
        "The rows the prediction leaves alone went from {} to {} ms{}.",
        figure(step_before - rows_before),
        figure(step_after - rows_after),
        match before.device {
            formats::report::DeviceKind::Cpu =>
                " (on the CPU they keep their f32 type: what moves there is run to run)",
            // On CUDA the whole model runs in the half type.
            formats::report::DeviceKind::Cuda if half => " (on CUDA they run in the half type too)",
            // Quantized at load, only the two rows' matrices change type.
            formats::report::DeviceKind::Cuda =>
                " (they keep their f32 type: what moves there is run to run)",
        }
    ));
    ctx.report.notes.push(lines.join(" "));
}

/// One row's measured change beside its prediction, and what its rates say about a gap.
fn row_gap(
    h: &RowCut,
    (before, after): (&ProfileReport, &ProfileReport),
    b: &RankedOp,
    a: &RankedOp,
    ms_before: f64,
    ms_after: f64,
    rung: &Rung,
) -> String {
    let predicted_ms = ms_before * (1.0 - h.cut_pct / h.share_pct.max(f64::MIN_POSITIVE));
    let kernel = a
        .kernel
        .as_deref()
        .map(|k| format!(", kernel `{k}`"))
        .unwrap_or_default();
    let head = format!(
        "`{}`: {} → {} ms a step (predicted {} ms{kernel})",
        h.row,
        figure(ms_before),
        figure(ms_after),
        figure(predicted_ms)
    );
    let (Some(rb), Some(ra)) = (&b.roofline, &a.roofline) else {
        return format!("{head}.");
    };
    let rates = format!(
        "{} → {} GFLOP/s, {} → {} GB/s",
        figure(rb.gflops_per_s),
        figure(ra.gflops_per_s),
        figure(rb.gbytes_per_s),
        figure(ra.gbytes_per_s)
    );
    let peak = before
        .ceilings
        .as_ref()
        .map(|c| c.peak_gflops)
        .unwrap_or(f64::NAN);
    let peak_after = after
        .ceilings
        .as_ref()
        .map(|c| c.peak_gflops)
        .unwrap_or(f64::NAN);
    // Over a tenth better than the prediction, with a higher peak in the new type: the roof the
    // prediction held the row under (f32's) was not the new kernel's.
    if ms_after < predicted_ms * 0.9 && peak_after > peak * 1.1 {
        let (kernel, grown) = if *rung == BF16 {
            ("half-type".to_string(), "doubled".to_string())
        } else {
            (
                rung.dtype.to_string(),
                format!("{}×", figure(rung.factor())),
            )
        };
        return format!(
            "{head}: {rates}, better than predicted. The prediction held the row under the f32 peak, {} GFLOP/s; the {kernel} \
             kernel's own peak on this machine is {} GFLOP/s (this run's ceilings), so the {grown} FLOP/B met a higher roof: it reached \
             {} of that roofline against {} in f32.",
            figure(peak),
            figure(peak_after),
            pct(ra.pct_of_roofline),
            pct(rb.pct_of_roofline)
        );
    }
    // Within a tenth of the prediction (or better), the arithmetic held.
    if ms_after <= predicted_ms * 1.1 {
        return format!("{head}: as predicted ({rates}).");
    }
    if (ra.gflops_per_s / rb.gflops_per_s - 1.0).abs() < 0.15 {
        format!(
            "{head}: {rates}. It read its bytes at a lower rate and did its arithmetic at the same one, so its time was set by the \
             kernel's arithmetic rate ({} of the {} GFLOP/s peak in f32), not by its bytes, though its f32 row read as memory-bound: \
             fewer bytes cannot speed up a row whose kernel is not waiting on memory.",
            pct(100.0 * rb.gflops_per_s / peak),
            figure(peak)
        )
    } else {
        format!(
            "{head}: {rates}; it reached {} of its new roofline against {} in f32, where the prediction held it at the same %.",
            pct(ra.pct_of_roofline),
            pct(rb.pct_of_roofline)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use course_model::fewer_bytes::row_cut;
    use profiler::reading;

    /// A report with ceilings (bw 25 GB/s, peak 400 GFLOP/s: the ridge at 16 FLOP/byte) and rows
    /// (name, share of a 10 ms step in %, intensity, % of roofline).
    fn report(rows: &[(&str, f64, f64, f64)]) -> ProfileReport {
        let (bw, peak) = (25.0, 400.0);
        let rows: Vec<_> = rows
            .iter()
            .map(|(name, share, intensity, pct_of_roofline)| {
                let us = share * 100.0;
                let roof = f64::min(peak, bw * intensity);
                let gflops = roof * pct_of_roofline / 100.0;
                let bound = if bw * intensity < peak { profiler::Bound::Memory } else { profiler::Bound::Compute };
                let figures = reading::Figures {
                    pct_of_roofline: *pct_of_roofline,
                    pct_of_memory_roofline: 100.0 * gflops / intensity / bw,
                    bound,
                    us_per_call: Some(us),
                };
                serde_json::json!({"name": name, "line": "matmuls", "calls": 1.0, "self_cpu_us": us, "cpu_total_us": us, "self_cpu_pct": share,
                    "roofline": {"time_basis": "cpu", "gflops_per_s": gflops, "gbytes_per_s": gflops / intensity, "intensity": intensity,
                        "roofline_gflops_per_s": roof, "pct_of_roofline": pct_of_roofline,
                        "pct_of_memory_roofline": figures.pct_of_memory_roofline, "bound": bound.as_str()},
                    "reading": reading::read(&figures, &reading::Thresholds::DEFAULT)})
            })
            .collect();
        let total: f64 = rows
            .iter()
            .map(|r| r["self_cpu_us"].as_f64().unwrap())
            .sum();
        let text = serde_json::json!({"schema": crate::results::profile_report::SCHEMA, "device": "cpu", "sort_by": "self_cpu_time_total",
            "ceilings": {"mem_read_gbps": bw, "peak_gflops": peak}, "reading_thresholds": reading::Thresholds::DEFAULT, "totals": {"self_cpu_us": total}, "rows": rows})
        .to_string();
        ProfileReport::parse(&text, "report.json").unwrap()
    }

    #[test]
    fn a_memory_bound_row_below_the_ridge_halves_one_past_it_reaches_the_peak_and_a_compute_bound_one_keeps_its_time(
    ) {
        let p = report(&[
            ("matmul", 60.0, 4.0, 60.0),
            ("lm_head", 20.0, 12.0, 80.0),
            ("attn_qk", 15.0, 32.0, 50.0),
            ("rest", 5.0, 1.0, 10.0),
        ]);
        let cut = |name| row_cut(&p, p.find(name).unwrap().1, &BF16).unwrap();
        // 4 → 8 FLOP/byte, below the ridge at 16: half the time.
        let m = cut("matmul");
        assert!((m.cut_pct - 30.0).abs() < 1e-9, "{m:?}");
        assert_eq!((m.bound, m.bound_after), (Bound::Memory, Bound::Memory));
        // 12 → 24 FLOP/byte, past the ridge: the roof rises from 300 to 400, the row keeps 3/4.
        let l = cut("lm_head");
        assert!((l.cut_pct - 5.0).abs() < 1e-9, "{l:?}");
        assert!(
            l.arithmetic.contains("past the ridge") && l.arithmetic.contains("400"),
            "{}",
            l.arithmetic
        );
        // Compute-bound: nothing.
        let a = cut("attn_qk");
        assert_eq!(a.cut_pct, 0.0);
        assert!(a.arithmetic.contains("compute-bound"), "{}", a.arithmetic);
    }

    #[test]
    fn q8_0_keeps_its_stored_width_of_a_memory_bound_rows_time_and_none_of_a_compute_bound_rows() {
        let p = report(&[
            ("matmul", 60.0, 2.0, 60.0),
            ("lm_head", 20.0, 12.0, 80.0),
            ("attn_qk", 20.0, 32.0, 50.0),
        ]);
        let cut = |name| row_cut(&p, p.find(name).unwrap().1, &Q8_0).unwrap();
        // 2 → 2 × 32 / 8.5 = 7.53 FLOP/byte, below the ridge at 16: the row keeps 8.5 / 32.
        let m = cut("matmul");
        assert!(
            (m.cut_pct - 60.0 * (1.0 - 8.5 / 32.0)).abs() < 1e-9,
            "{m:?}"
        );
        assert!(
            m.arithmetic.contains("8.5 bits a weight instead of 32")
                && m.arithmetic.contains("32 / 8.5 = 3.76")
                && m.arithmetic.contains("60.0% × (1 − 8.5/32) = 44.1%"),
            "{}",
            m.arithmetic
        );
        // 12 → 45 FLOP/byte, past the ridge: the roof rises from 300 to 400, the row keeps 3/4.
        let l = cut("lm_head");
        assert!((l.cut_pct - 5.0).abs() < 1e-9, "{l:?}");
        assert_eq!(cut("attn_qk").cut_pct, 0.0);
        // Forgetting the scales keeps 8 / 32 instead: a different figure, which the check names.
        let slip = row_cut(&p, p.find("matmul").unwrap().1, &Q8_0.without_scales()).unwrap();
        assert!((slip.cut_pct - 45.0).abs() < 1e-9, "{slip:?}");
    }

    #[test]
    fn a_cut_never_exceeds_half_the_row_and_never_goes_negative() {
        for intensity in [0.1, 1.0, 7.9, 8.0, 8.1, 15.9, 16.0, 100.0] {
            for pct_of_roofline in [1.0, 50.0, 100.0] {
                let p = report(&[("matmul", 100.0, intensity, pct_of_roofline)]);
                let h = row_cut(&p, &p.ops[0], &BF16).unwrap();
                assert!(
                    (0.0..=50.0 + 1e-9).contains(&h.cut_pct),
                    "I={intensity}: {h:?}"
                );
            }
        }
    }
}
