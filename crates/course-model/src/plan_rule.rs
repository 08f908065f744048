//! The course's rule for a plan to cut the step time: which op, by what mechanism, for how
//! much. One implementation: `course check 3`, `4` and `5` grade by it, and the reference
//! solutions derive their answers from their own profile with it.
//!
//! It lives below the grader so that the reference solutions can apply it without linking the
//! grading code; the grader judges by the thresholds of its key (`[exercise-3.mechanism]`, kept
//! equal to `Thresholds::DEFAULT` by a grader test), the solutions by the defaults.
//!
//! Everything is read off the learner's own `report.json` (the profiler computes the roofline
//! columns; this module only compares them with the key's thresholds, [`Thresholds`]). The
//! comparisons are the profiler's reading rule's own tests (`profiler::reading`: memory
//! traffic, slow kernel, launch overhead, each shown, open or refuted), which the table's
//! Reading column is printed by: with the default key a mechanism the table reads for a row is
//! never judged wrong for it.
//!
//! - **The ceiling rule.** Fixing an op saves at most its share of the step.
//! - **memory-traffic** (the op's time is moving bytes): wrong below `not_memory_below_pct` of
//!   its memory roofline (`pct_of_memory_roofline`), right above `memory_above_pct`, accepted
//!   and flagged for review in between. Cut ≤ share.
//! - **slow-kernel** (the op's kernel is far from what the hardware allows for its work): right
//!   below `slow_kernel_below_pct` of its roofline (`pct_of_roofline`), wrong above
//!   `near_roofline_above_pct`, flagged in between. A faster kernel can at best bring the op to
//!   its roofline: cut ≤ share × (1 − pct_of_roofline / 100).
//! - **wasted-work** (work the step does not need, e.g. logits for positions nobody reads):
//!   skipping work leaves the op's memory traffic in place (its weights are still read), so
//!   cut ≤ share × (1 − pct_of_memory_roofline / 100), the time above its memory floor.
//! - **launch-overhead** (the op's time is launching or dispatching it): right only where a call
//!   takes less than `launch_overhead_below_us`. Cut ≤ share.
//!
//! A row without roofline columns (it declared no work, or the run measured no ceilings)
//! cannot show what holds it back: there only wasted-work and launch-overhead are accepted,
//! flagged for review.

use crate::results::profile_report::{ProfileReport, RankedOp};
use profiler::reading::{self, Evidence, Reading, Thresholds};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    MemoryTraffic,
    SlowKernel,
    WastedWork,
    LaunchOverhead,
}

impl Mechanism {
    pub const ALL: [Mechanism; 4] = [
        Mechanism::MemoryTraffic,
        Mechanism::SlowKernel,
        Mechanism::WastedWork,
        Mechanism::LaunchOverhead,
    ];

    /// As answers.toml writes it.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::MemoryTraffic => "memory-traffic",
            Mechanism::SlowKernel => "slow-kernel",
            Mechanism::WastedWork => "wasted-work",
            Mechanism::LaunchOverhead => "launch-overhead",
        }
    }

    /// Case, spaces and underscores do not matter ("Memory traffic" is memory-traffic).
    pub fn parse(text: &str) -> Option<Mechanism> {
        let wanted: String = text
            .trim()
            .trim_matches('`')
            .to_lowercase()
            .chars()
            .map(|c| if c == ' ' || c == '_' { '-' } else { c })
            .collect();
        Mechanism::ALL.into_iter().find(|m| m.name() == wanted)
    }

    /// `memory-traffic | slow-kernel | wasted-work | launch-overhead`.
    pub fn choices() -> String {
        Mechanism::ALL.map(Mechanism::name).join(" | ")
    }
}

/// What the rule makes of a mechanism for an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Right,
    /// Accepted, but the measurements do not settle it: an instructor should read it.
    Flagged,
    Wrong,
}

/// A verdict and why, with the measured figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    pub reason: String,
}

impl Judgement {
    fn new(verdict: Verdict, reason: String) -> Self {
        Judgement { verdict, reason }
    }

    pub fn accepted(&self) -> bool {
        self.verdict != Verdict::Wrong
    }
}

/// A mechanism judged for one op, and the most a fix by it can save.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    pub op: RankedOp,
    pub mechanism: Mechanism,
    pub judgement: Judgement,
    /// The most the fix can cut from the step, in % (the share alone when the mechanism is
    /// refuted: the ceiling rule still holds).
    pub max_cut_pct: f64,
    /// How `max_cut_pct` follows from the measurements, in words.
    pub arithmetic: String,
}

/// An expected cut within this many points of the allowed one is accepted: shares are copied
/// from a table printed with two decimals.
pub const CUT_TOLERANCE_PCT: f64 = 0.05;

/// A percentage as the feedback prints it.
pub fn pct(x: f64) -> String {
    if x.abs() >= 0.1 || x == 0.0 {
        format!("{x:.1}%")
    } else {
        format!("{x:.2}%")
    }
}

/// A rate or a time with three significant figures or so.
pub fn figure(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The mechanism a reading stands on; compute-bound names none (less work is all that helps).
pub fn mechanism_of(reading: Reading) -> Option<Mechanism> {
    match reading {
        Reading::MemoryBound => Some(Mechanism::MemoryTraffic),
        Reading::SlowKernel => Some(Mechanism::SlowKernel),
        Reading::LaunchOverhead => Some(Mechanism::LaunchOverhead),
        Reading::ComputeBound => None,
    }
}

/// The table's reading of an op as the report holds it, in words; when the key grades with
/// other thresholds than the report was read with, it says so.
fn table_reading(profile: &ProfileReport, op: &RankedOp, key: &Thresholds) -> String {
    match (op.reading, profile.reading_thresholds.as_ref()) {
        (Some(r), Some(t)) if t == key => format!("; the table reads it as {}", r.label()),
        (Some(r), _) => format!("; the table reads it as {} (with the report's thresholds; this key grades with others)", r.label()),
        (None, _) => String::new(),
    }
}

/// What the profile measured for an op, in one sentence: rates, % of its rooflines, the
/// bandwidth ceiling, the lower roof, the kernel and the table's reading.
pub fn measured(profile: &ProfileReport, op: &RankedOp, key: &Thresholds) -> String {
    let kernel = op
        .kernel
        .as_ref()
        .map(|k| format!(" on kernel `{k}`"))
        .unwrap_or_default();
    match (&op.roofline, &profile.ceilings) {
        (Some(r), Some(c)) => format!(
            "`{}` ran at {} GB/s and {} GFLOP/s{kernel}: {} of the {} GB/s read bandwidth (its memory roofline) and {} of its roofline \
             ({} GFLOP/s at {} FLOP/byte, where the {} roof is the lower){}",
            op.name,
            figure(r.gbytes_per_s),
            figure(r.gflops_per_s),
            pct(r.pct_of_memory_roofline),
            figure(c.mem_read_gbps),
            pct(r.pct_of_roofline),
            figure(r.roofline_gflops_per_s),
            figure(r.intensity),
            r.bound.as_str(),
            table_reading(profile, op, key)
        ),
        (_, None) => format!("{} records no measured ceilings, so `{}` has no roofline columns{kernel}", profile.file, op.name),
        (None, Some(_)) => format!("`{}` declared no work (no FLOP or byte count), so its row has no roofline columns{kernel}", op.name),
    }
}

/// The ceiling rule alone: fixing an op saves at most its share.
pub fn ceiling(op: &RankedOp) -> (f64, String) {
    (
        op.share_pct,
        format!(
            "`{}` has {} of the step: fixing it can save at most {}",
            op.name,
            pct(op.share_pct),
            pct(op.share_pct)
        ),
    )
}

/// Judge `mechanism` for `op` against the profile's measurements.
pub fn assess(
    profile: &ProfileReport,
    op: &RankedOp,
    mechanism: Mechanism,
    key: &Thresholds,
) -> Assessment {
    let facts = measured(profile, op, key);
    let roofline = op.roofline.as_ref().filter(|_| profile.ceilings.is_some());
    let no_roofline = || {
        Judgement::new(
            Verdict::Wrong,
            format!(
                "{facts}: nothing measured says what holds it back. Without roofline columns the rule accepts only wasted-work or \
                 launch-overhead (for review)"
            ),
        )
    };
    let judgement = match mechanism {
        Mechanism::MemoryTraffic => match roofline.map(|r| reading::memory_traffic(r.pct_of_memory_roofline, key)) {
            None => no_roofline(),
            Some(Evidence::Refuted) => Judgement::new(
                Verdict::Wrong,
                format!(
                    "{facts}. Below {} of its memory roofline an op is not held back by memory traffic: moving its bytes is a small part \
                     of its time",
                    pct(key.not_memory_below_pct)
                ),
            ),
            Some(Evidence::Shown) => Judgement::new(
                Verdict::Right,
                format!("{facts}: above {} of its memory roofline, its time is mostly moving bytes", pct(key.memory_above_pct)),
            ),
            Some(Evidence::Open) => Judgement::new(
                Verdict::Flagged,
                format!(
                    "{facts}: between {} and {} of its memory roofline, memory traffic may or may not be what holds it back \
                     (accepted, for review)",
                    pct(key.not_memory_below_pct),
                    pct(key.memory_above_pct)
                ),
            ),
        },
        Mechanism::SlowKernel => match roofline.map(|r| reading::slow_kernel(r.pct_of_roofline, key)) {
            None => no_roofline(),
            Some(Evidence::Shown) => Judgement::new(
                Verdict::Right,
                format!("{facts}: below {} of its roofline, its kernel is far from what the hardware allows for its work", pct(key.slow_kernel_below_pct)),
            ),
            Some(Evidence::Refuted) => Judgement::new(
                Verdict::Wrong,
                format!(
                    "{facts}. Above {} of its roofline an op is near what the hardware allows for its work: a faster kernel has little \
                     to win",
                    pct(key.near_roofline_above_pct)
                ),
            ),
            Some(Evidence::Open) => Judgement::new(
                Verdict::Flagged,
                format!(
                    "{facts}: between {} and {} of its roofline, a better kernel may or may not be what it needs (accepted, for review)",
                    pct(key.slow_kernel_below_pct),
                    pct(key.near_roofline_above_pct)
                ),
            ),
        },
        Mechanism::WastedWork => match roofline {
            None => Judgement::new(Verdict::Flagged, format!("{facts}: skipping unneeded work is accepted for review")),
            // A profile cannot show that work is unneeded, only what skipping it could save: an
            // instructor confirms the waste (otherwise any op could be called wasteful and pass).
            Some(_) => Judgement::new(
                Verdict::Flagged,
                format!("{facts}. The profile cannot see which work is unneeded, but it bounds what skipping it can save"),
            ),
        },
        Mechanism::LaunchOverhead => match op.us_per_call() {
            None => Judgement::new(Verdict::Flagged, format!("{} does not say how many calls `{}` made (accepted, for review)", profile.file, op.name)),
            Some(per_call) => {
                let calls = op.calls.unwrap_or(0.0);
                if reading::launch_overhead(per_call, key) == Evidence::Refuted {
                    Judgement::new(
                        Verdict::Wrong,
                        format!(
                            "`{}` takes {} µs a call ({} calls, {} µs of {}): launching or dispatching an op costs a few µs, so only below \
                             {} µs a call can overhead be much of its time; at {} µs a call its time is its own work{}",
                            op.name,
                            figure(per_call),
                            figure(calls),
                            figure(op.self_us),
                            profile.device.column(),
                            figure(key.launch_overhead_below_us),
                            figure(per_call),
                            table_reading(profile, op, key)
                        ),
                    )
                } else {
                    let verdict = if roofline.is_some() { Verdict::Right } else { Verdict::Flagged };
                    Judgement::new(
                        verdict,
                        format!(
                            "`{}` takes {} µs a call ({} calls): below {} µs a call, launching and dispatching can be much of its time{}",
                            op.name,
                            figure(per_call),
                            figure(calls),
                            figure(key.launch_overhead_below_us),
                            table_reading(profile, op, key)
                        ),
                    )
                }
            }
        },
    };
    let (max_cut_pct, arithmetic) = match (mechanism, roofline, judgement.accepted()) {
        (Mechanism::SlowKernel, Some(r), true) => {
            let left = (1.0 - r.pct_of_roofline / 100.0).max(0.0);
            (
                op.share_pct * left,
                format!(
                    "`{}` has {} of the step and reached {} of its roofline: a faster kernel can at best bring it to its roofline, so it \
                     can save at most {} × (1 − {}/100) = {}",
                    op.name,
                    pct(op.share_pct),
                    pct(r.pct_of_roofline),
                    pct(op.share_pct),
                    figure(r.pct_of_roofline),
                    pct(op.share_pct * left)
                ),
            )
        }
        (Mechanism::WastedWork, Some(r), true) => {
            let left = (1.0 - r.pct_of_memory_roofline / 100.0).max(0.0);
            (
                op.share_pct * left,
                format!(
                    "`{}` has {} of the step and moves its bytes at {} of the memory roofline: skipping work leaves that memory traffic \
                     (its weights and inputs are still read) in place, so it can save at most the time above its memory floor, \
                     {} × (1 − {}/100) = {}",
                    op.name,
                    pct(op.share_pct),
                    pct(r.pct_of_memory_roofline),
                    pct(op.share_pct),
                    figure(r.pct_of_memory_roofline),
                    pct(op.share_pct * left)
                ),
            )
        }
        _ => ceiling(op),
    };
    Assessment {
        op: op.clone(),
        mechanism,
        judgement,
        max_cut_pct,
        arithmetic,
    }
}

/// Is `expected_cut_pct` within what the plan can save? The reason shows the arithmetic.
pub fn judge_cut(max_cut_pct: f64, arithmetic: &str, expected_cut_pct: f64) -> Judgement {
    // NaN is not a cut either.
    if expected_cut_pct.is_nan() || expected_cut_pct <= 0.0 {
        return Judgement::new(
            Verdict::Wrong,
            format!(
                "a cut is a positive share of the step, in %; you wrote {}",
                pct(expected_cut_pct)
            ),
        );
    }
    if expected_cut_pct > max_cut_pct + CUT_TOLERANCE_PCT {
        Judgement::new(
            Verdict::Wrong,
            format!("{arithmetic}, you expect {}", pct(expected_cut_pct)),
        )
    } else {
        Judgement::new(
            Verdict::Right,
            format!(
                "{arithmetic}; you expect {}: within it",
                pct(expected_cut_pct)
            ),
        )
    }
}

/// Every op and mechanism the rule accepts, largest possible cut first (unflagged before
/// flagged at equal cuts; then by name, so the order is stable).
pub fn accepted_plans(profile: &ProfileReport, key: &Thresholds) -> Vec<Assessment> {
    let mut plans: Vec<Assessment> = profile
        .ops
        .iter()
        .flat_map(|op| Mechanism::ALL.map(|m| assess(profile, op, m, key)))
        .filter(|a| a.judgement.accepted() && a.max_cut_pct > 0.0)
        .collect();
    plans.sort_by(|a, b| {
        b.max_cut_pct
            .total_cmp(&a.max_cut_pct)
            .then_with(|| {
                (a.judgement.verdict == Verdict::Flagged)
                    .cmp(&(b.judgement.verdict == Verdict::Flagged))
            })
            .then_with(|| a.op.name.cmp(&b.op.name))
            .then_with(|| a.mechanism.cmp(&b.mechanism))
    });
    plans
}

/// Which fix a reference solution prefers among right plans that all reach the target: a
/// kernel far below its roofline first (the code changes; the work and the numbers do not),
/// then work that need not be done, then moving fewer bytes (another layout or precision),
/// then launch overhead.
fn preference(mechanism: Mechanism) -> u8 {
    match mechanism {
        Mechanism::SlowKernel => 0,
        Mechanism::WastedWork => 1,
        Mechanism::MemoryTraffic => 2,
        Mechanism::LaunchOverhead => 3,
    }
}

/// The plan a reference solution writes: among the unflagged accepted plans that can reach
/// `target_pct`, the preferred mechanism (ties: the largest possible cut); when none can, the
/// unflagged plan with the largest possible cut (a flagged one only when there is no other).
/// The cut to expect is `target_pct` when the plan allows that much, else the honest smaller
/// cut it allows.
pub fn best_plan(
    profile: &ProfileReport,
    key: &Thresholds,
    target_pct: f64,
) -> Option<(Assessment, f64)> {
    let plans = accepted_plans(profile, key);
    let right = || {
        plans
            .iter()
            .filter(|a| a.judgement.verdict == Verdict::Right)
    };
    // `plans` is sorted by the largest cut first, and min_by_key keeps the first of equals.
    let reaching = right()
        .filter(|a| a.max_cut_pct >= target_pct)
        .min_by_key(|a| preference(a.mechanism));
    let best = reaching
        .or_else(|| right().next())
        .or(plans.first())?
        .clone();
    // A little under the ceiling, so a share copied with two decimals stays inside it.
    let cut = if best.max_cut_pct >= target_pct {
        target_pct
    } else {
        (best.max_cut_pct * 100.0).floor() / 100.0
    };
    Some((best, cut))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::profile_report::ProfileReport;

    /// The default key's thresholds: the grader pins key.toml's `[exercise-3.mechanism]` equal
    /// to the profiler's defaults.
    fn key() -> Thresholds {
        Thresholds::DEFAULT
    }

    /// A row of [`profile`]: name, self µs, calls, Some((GB/s, GFLOP/s, FLOP/byte)).
    type Row<'a> = (&'a str, f64, f64, Option<(f64, f64, f64)>);

    /// A profile with ceilings (25 GB/s, 400 GFLOP/s) and rows, each read by the profiler's
    /// rule at the default thresholds, as the profiler writes the report.
    fn profile(rows: &[Row]) -> ProfileReport {
        let (bw, peak) = (25.0, 400.0);
        let sum: f64 = rows.iter().map(|r| r.1).sum();
        let rows: Vec<_> = rows
            .iter()
            .map(|(name, us, calls, rates)| {
                let roofline = rates.map(|(gbs, gflops, intensity)| {
                    let roof = f64::min(peak, bw * intensity);
                    let bound = if bw * intensity < peak { profiler::Bound::Memory } else { profiler::Bound::Compute };
                    let figures = reading::Figures {
                        pct_of_roofline: 100.0 * gflops / roof,
                        pct_of_memory_roofline: 100.0 * gbs / bw,
                        bound,
                        us_per_call: Some(us / calls),
                    };
                    let read = reading::read(&figures, &reading::Thresholds::DEFAULT);
                    (serde_json::json!({"time_basis": "cpu", "gflops_per_s": gflops, "gbytes_per_s": gbs, "intensity": intensity,
                        "roofline_gflops_per_s": roof, "pct_of_roofline": figures.pct_of_roofline,
                        "pct_of_memory_roofline": figures.pct_of_memory_roofline, "bound": bound.as_str()}), read)
                });
                serde_json::json!({"name": name, "line": profiler::Line::of_undeclared(name), "calls": calls, "self_cpu_us": us, "cpu_total_us": us, "self_cpu_pct": 100.0 * us / sum,
                    "kernel": "candle", "roofline": roofline.as_ref().map(|r| &r.0), "reading": roofline.map(|r| r.1)})
            })
            .collect();
        let text = serde_json::json!({"schema": crate::results::profile_report::SCHEMA, "device": "cpu", "sort_by": "self_cpu_time_total",
            "ceilings": {"device": "test", "threads": 2, "kernels": "avx512", "build": "release", "mem_read_gbps": bw, "peak_gflops": peak,
                         "bandwidth_how": "", "peak_how": ""},
            "reading_thresholds": reading::Thresholds::DEFAULT,
            "totals": {"self_cpu_us": sum}, "rows": rows})
        .to_string();
        ProfileReport::parse(&text, "report.json").unwrap()
    }

    fn gelu_like() -> ProfileReport {
        profile(&[
            ("matmul", 6500.0, 48.0, Some((15.0, 30.0, 2.0))),
            ("lm_head", 2200.0, 5.0, Some((13.75, 27.5, 2.0))),
            ("gelu", 800.0, 12.0, Some((0.5, 0.6, 1.2))),
            ("mask", 500.0, 1000.0, None),
        ])
    }

    #[test]
    fn memory_traffic_follows_the_memory_roofline() {
        let p = gelu_like();
        let gelu = assess(&p, &p.ops[2], Mechanism::MemoryTraffic, &key());
        assert_eq!(
            gelu.judgement.verdict,
            Verdict::Wrong,
            "{}",
            gelu.judgement.reason
        );
        assert!(
            gelu.judgement.reason.contains("2.0% of the 25.0 GB/s"),
            "{}",
            gelu.judgement.reason
        );
        assert_eq!(
            gelu.max_cut_pct, p.ops[2].share_pct,
            "a refuted mechanism keeps only the ceiling"
        );
        let matmul = assess(&p, &p.ops[0], Mechanism::MemoryTraffic, &key());
        assert_eq!(matmul.judgement.verdict, Verdict::Right);
        let between = profile(&[("x", 10.0, 1.0, Some((10.0, 1.0, 0.1)))]);
        assert_eq!(
            assess(&between, &between.ops[0], Mechanism::MemoryTraffic, &key())
                .judgement
                .verdict,
            Verdict::Flagged
        );
    }

    #[test]
    fn slow_kernel_is_capped_by_the_room_below_the_roofline() {
        let p = gelu_like();
        let gelu = assess(&p, &p.ops[2], Mechanism::SlowKernel, &key());
        assert_eq!(gelu.judgement.verdict, Verdict::Right);
        let roof_pct = 100.0 * 0.6 / 30.0;
        assert!((gelu.max_cut_pct - p.ops[2].share_pct * (1.0 - roof_pct / 100.0)).abs() < 1e-9);
        // matmul at 30/50 = 60% of its roofline: near what the hardware allows.
        assert_eq!(
            assess(&p, &p.ops[0], Mechanism::SlowKernel, &key())
                .judgement
                .verdict,
            Verdict::Wrong
        );
    }

    #[test]
    fn wasted_work_leaves_the_memory_floor() {
        let p = gelu_like();
        let lm_head = assess(&p, &p.ops[1], Mechanism::WastedWork, &key());
        // Accepted, but only a person can confirm that the work is unneeded.
        assert_eq!(lm_head.judgement.verdict, Verdict::Flagged);
        // 55% of the memory roofline: at most 45% of its share.
        assert!((lm_head.max_cut_pct - p.ops[1].share_pct * 0.45).abs() < 1e-9);
        let cut = judge_cut(lm_head.max_cut_pct, &lm_head.arithmetic, 18.0);
        assert_eq!(cut.verdict, Verdict::Wrong);
        assert!(
            cut.reason.ends_with("= 9.9%, you expect 18.0%"),
            "{}",
            cut.reason
        );
    }

    #[test]
    fn launch_overhead_needs_short_calls_and_rows_without_work_are_flagged() {
        let p = gelu_like();
        assert_eq!(
            assess(&p, &p.ops[0], Mechanism::LaunchOverhead, &key())
                .judgement
                .verdict,
            Verdict::Wrong
        );
        let mask = p.find("mask").unwrap().1;
        assert_eq!(
            assess(&p, mask, Mechanism::LaunchOverhead, &key())
                .judgement
                .verdict,
            Verdict::Flagged
        );
        assert_eq!(
            assess(&p, mask, Mechanism::WastedWork, &key())
                .judgement
                .verdict,
            Verdict::Flagged
        );
        assert_eq!(
            assess(&p, mask, Mechanism::MemoryTraffic, &key())
                .judgement
                .verdict,
            Verdict::Wrong
        );
        assert_eq!(
            assess(&p, mask, Mechanism::SlowKernel, &key())
                .judgement
                .verdict,
            Verdict::Wrong
        );
    }

    #[test]
    fn the_ceiling_rule_bounds_every_cut() {
        let p = gelu_like();
        for op in &p.ops {
            for m in Mechanism::ALL {
                let a = assess(&p, op, m, &key());
                assert!(
                    a.max_cut_pct <= op.share_pct + 1e-12,
                    "{} {}",
                    op.name,
                    m.name()
                );
            }
        }
        let (max, arithmetic) = ceiling(&p.ops[2]);
        let cut = judge_cut(max, &arithmetic, 10.0);
        assert_eq!(cut.verdict, Verdict::Wrong);
        assert_eq!(
            cut.reason,
            "`gelu` has 8.0% of the step: fixing it can save at most 8.0%, you expect 10.0%"
        );
    }

    #[test]
    fn the_best_plan_is_accepted_and_honest() {
        let p = gelu_like();
        let (best, cut) = best_plan(&p, &key(), 10.0).unwrap();
        assert_eq!(
            (best.op.name.as_str(), best.mechanism),
            ("matmul", Mechanism::MemoryTraffic)
        );
        assert_eq!(cut, 10.0);
        // A slow kernel that can give the cut on its own is preferred to moving fewer bytes:
        // here gelu has 13% of the step at 2% of its roofline.
        let slow = profile(&[
            ("matmul", 6000.0, 48.0, Some((15.0, 30.0, 2.0))),
            ("lm_head", 2200.0, 5.0, Some((13.75, 27.5, 2.0))),
            ("gelu", 1300.0, 12.0, Some((0.5, 0.6, 1.2))),
            ("mask", 500.0, 1000.0, None),
        ]);
        let (best, cut) = best_plan(&slow, &key(), 10.0).unwrap();
        assert_eq!(
            (best.op.name.as_str(), best.mechanism),
            ("gelu", Mechanism::SlowKernel)
        );
        assert_eq!(cut, 10.0);
        // Twelve equal slow ops: none can give 10%, so the honest smaller cut.
        let names: Vec<String> = (0..12).map(|i| format!("op{i:02}")).collect();
        let rows: Vec<_> = names
            .iter()
            .map(|n| (n.as_str(), 100.0, 1.0, Some((1.0, 1.0, 1.0))))
            .collect();
        let small = profile(&rows);
        let (best, cut) = best_plan(&small, &key(), 10.0).unwrap();
        assert_eq!(best.mechanism, Mechanism::SlowKernel);
        assert!(
            cut < 10.0 && cut <= best.max_cut_pct,
            "{cut} {}",
            best.max_cut_pct
        );
        assert_eq!(
            judge_cut(best.max_cut_pct, &best.arithmetic, cut).verdict,
            Verdict::Right
        );
    }

    #[test]
    fn the_mechanism_a_row_reads_as_is_never_judged_wrong_for_it() {
        // The table's Reading column and the plan rule are one rule: over rows on both sides of
        // every default threshold, with short and long calls, the reading's mechanism is
        // accepted (right, or flagged where the figures leave it open).
        let mut rows = Vec::new();
        for pct in [0.5, 10.0, 24.0, 26.0, 40.0, 49.0, 51.0, 80.0, 117.0] {
            for us_per_call in [4.0_f64, 19.0, 21.0, 400.0] {
                // Memory side (1 FLOP/byte, a roof of 25 GFLOP/s) and compute side (100 FLOP/byte,
                // the 400 GFLOP/s peak) at `pct` of the roofline.
                rows.push((
                    format!("m{pct}-{us_per_call}"),
                    us_per_call,
                    Some((0.25 * pct, 0.25 * pct, 1.0)),
                ));
                rows.push((
                    format!("c{pct}-{us_per_call}"),
                    us_per_call,
                    Some((0.04 * pct, 4.0 * pct, 100.0)),
                ));
            }
        }
        // The report lists its rows by self time, largest first.
        rows.sort_by(|a, b| b.1.total_cmp(&a.1));
        let rows: Vec<_> = rows
            .iter()
            .map(|(n, us, r)| (n.as_str(), *us, 1.0, *r))
            .collect();
        let p = profile(&rows);
        let mut seen = std::collections::BTreeSet::new();
        for op in &p.ops {
            let read = op
                .reading
                .unwrap_or_else(|| panic!("{} has a roofline, so a reading", op.name));
            seen.insert(read.as_str());
            let Some(mechanism) = mechanism_of(read) else {
                // Compute-bound: a faster kernel is not the answer.
                assert_ne!(
                    assess(&p, op, Mechanism::SlowKernel, &key())
                        .judgement
                        .verdict,
                    Verdict::Right,
                    "{}",
                    op.name
                );
                continue;
            };
            let a = assess(&p, op, mechanism, &key());
            assert!(
                a.judgement.accepted(),
                "{} reads {} but {} is judged wrong: {}",
                op.name,
                read.as_str(),
                mechanism.name(),
                a.judgement.reason
            );
            assert!(
                a.judgement
                    .reason
                    .contains(&format!("the table reads it as {}", read.label())),
                "{}",
                a.judgement.reason
            );
        }
        assert_eq!(seen.len(), 4, "every reading occurs: {seen:?}");
    }

    #[test]
    fn a_key_with_other_thresholds_still_grades_by_its_own_and_says_the_table_differs() {
        // gelu at 2% of its roofline, 67 µs a call: a slow kernel in the table. A key whose
        // launch-overhead line is at 100 µs makes launch-overhead right; the feedback names the
        // table's reading as the report's, not the key's.
        let p = gelu_like();
        let gelu = p.find("gelu").unwrap().1;
        assert_eq!(gelu.reading, Some(Reading::SlowKernel));
        let eager = Thresholds {
            launch_overhead_below_us: 100.0,
            ..key()
        };
        let a = assess(&p, gelu, Mechanism::LaunchOverhead, &eager);
        assert_eq!(
            a.judgement.verdict,
            Verdict::Right,
            "{}",
            a.judgement.reason
        );
        let m = assess(&p, gelu, Mechanism::MemoryTraffic, &eager);
        assert!(m.judgement.reason.contains("the table reads it as slow kernel (with the report's thresholds; this key grades with others)"), "{}", m.judgement.reason);
    }

    #[test]
    fn mechanism_names_parse_loosely() {
        assert_eq!(
            Mechanism::parse(" Memory traffic "),
            Some(Mechanism::MemoryTraffic)
        );
        assert_eq!(Mechanism::parse("slow_kernel"), Some(Mechanism::SlowKernel));
        assert_eq!(Mechanism::parse("fusion"), None);
    }
}
