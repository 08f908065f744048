//! Exercise 4's `[bytes]`: the predicted cut of storing the `matmul` and `lm_head` weights in
//! half the bytes, graded by the roofline's arithmetic on the learner's own f32 profile
//! (`grader::exercise_checks::fewer_bytes`), never by the measured outcome, which is shown
//! beside it in a note.
//!
//! The CPU fixture's two rows are memory-bound and stay so with twice their intensity (3.95 and
//! 3.96 FLOP/byte doubled, below the ridge at 352.2 / 27.8 = 12.7 FLOP/byte): each halves, so
//! the step's cut is half of 60.9% + 20.0%, 40.4%. In the CUDA fixture both are compute-bound
//! (184 and 218 FLOP/byte against a ridge of 11.8): fewer bytes give nothing.
//! `ex4-cpu-f32.json` and `ex4-cpu-bf16.json` are one real pair of runs, f32 and bf16 weights,
//! from before the bf16 products ran on `avx512_bf16`'s dot product; `ex4-dot-f32.json` and
//! `ex4-dot-bf16.json` another pair, after (make-fixtures.py there says how they were made).
//!
//! `[quantized]`, the second rung: the same rows in q8_0, 34 bytes per 32 weights, 8.5 bits a
//! weight with the scales. On every CPU fixture both rows cross the ridge there (3.95 × 32 / 8.5
//! = 14.9 FLOP/byte against 12.7 at most), so the peak bounds the cut, and 8 bits or 8.5 give the
//! same figure: the stored width is asked on its own. The scales' slip in the rows' cuts shows on
//! the CPU fixture's rows under a higher peak ([`higher_ridge`]), where they stay memory-bound.
//!
//! The q8_0 rung is measured too (`--dtype q8_0`: GPT-2's matrices quantized at load).
//! `ex4-q8-f32.json` and `ex4-q8-q8_0.json` are one pair of real runs, one after the other, on a
//! 2-core Intel Xeon (AVX-512 VNNI): `target/debug/gpt2 profile --model synthetic --device cpu
//! --mlp stock [--dtype q8_0] --out DIR`, as written (profiler-report as the profiler writes it).

mod support;

use grader::{render, ExerciseReport, Outcome};
use support::*;

const FIELDS: [&str; 3] = [
    "bytes.matmul_cut_pct",
    "bytes.lm_head_cut_pct",
    "bytes.predicted_cut_pct",
];

const QUANTIZED: [&str; 4] = [
    "quantized.bits_per_weight",
    "quantized.matmul_cut_pct",
    "quantized.lm_head_cut_pct",
    "quantized.predicted_cut_pct",
];

/// Exercise 4 graded with `report` as the learner's exercise-3 profile, `bytes` as its
/// `[bytes]` section (`[quantized]` right on that profile) and, when given, `measured` as the
/// bf16 profile.
fn grade(report: &str, bytes: &str, measured: Option<&str>) -> ExerciseReport {
    grade_both(report, bytes, &quantized_answers(report), measured)
}

/// Exercise 4 graded with `quantized` as its `[quantized]` section, `[bytes]` right.
fn grade_quantized(report: &str, quantized: &str) -> ExerciseReport {
    grade_both(report, &bytes_answers(report), quantized, None)
}

fn grade_both(
    report: &str,
    bytes: &str,
    quantized: &str,
    measured: Option<&str>,
) -> ExerciseReport {
    grade_measured(report, bytes, quantized, measured, None)
}

/// [`grade_both`] with `q8_0`, when given, as the q8_0 profile.
fn grade_measured(
    report: &str,
    bytes: &str,
    quantized: &str,
    measured: Option<&str>,
    q8_0: Option<&str>,
) -> ExerciseReport {
    let mut files = perfect_files();
    files.insert("exercise-3/results/report.json".into(), report.to_string());
    files.insert("exercise-4/results/budget.json".into(), budget_json(report));
    // [bytes] and [quantized] are the answers' last two sections, in that order.
    files.insert(
        "exercise-4/answers.toml".into(),
        with_last_section(&perfect_ex4(), "bytes", &format!("{bytes}{quantized}")),
    );
    if let Some(m) = measured {
        files.insert("exercise-4/results/bf16/report.json".into(), m.to_string());
    }
    if let Some(q) = q8_0 {
        files.insert("exercise-4/results/q8_0/report.json".into(), q.to_string());
    }
    grader().grade_exercise(&submission(files), 4)
}

/// The `[bytes]` questions and the notes, so each snapshot shows the case it is named for.
fn feedback(report: &ExerciseReport) -> String {
    let only = only(report, "bytes.", |n| {
        n.contains("bf16") || n.contains("half-type")
    });
    render::terminal(&only, false)
}

/// The `[quantized]` questions alone.
fn quantized_feedback(report: &ExerciseReport) -> String {
    render::terminal(&only(report, "quantized.", |_| false), false)
}

/// The q8_0 cut of `row` on `report` at `bits` a weight, worked here from the fixture's columns.
fn q_cut(report: &str, row: &str, bits: f64) -> f64 {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    let (bw, peak) = (
        v["ceilings"]["mem_read_gbps"].as_f64().unwrap(),
        v["ceilings"]["peak_gflops"].as_f64().unwrap(),
    );
    let (share, roofline) = fixture_row(report, row);
    let i = roofline["intensity"].as_f64().unwrap();
    share * (1.0 - f64::min(peak, bw * i) / f64::min(peak, bw * i * 32.0 / bits))
}

#[test]
fn the_right_prediction() {
    let r = grade(&cpu_profile(), &bytes_answers(&cpu_profile()), None);
    assert_eq!(
        outcomes(&r, &FIELDS),
        [Outcome::Right; 3],
        "{}",
        feedback(&r)
    );
    assert_reason_says(
        &r,
        "bytes.matmul_cut_pct",
        &["still below the ridge", "60.9% × 1/2 = 30.4%"],
    );
    // Without the bf16 run, the note says how to measure it.
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("Your predicted cut is 40.4%")
                && n.contains("results/bf16/report.json")),
        "{:?}",
        r.notes
    );
    insta::assert_snapshot!(feedback(&r));
}

#[test]
fn a_right_prediction_in_other_words() {
    // The same figures as text, rounded to one decimal, and the sum of the rounded rows.
    let bytes = "[bytes]\nmatmul_cut_pct = \"30.4\"\nlm_head_cut_pct = \"10\"\npredicted_cut_pct = \"40.4\"\n";
    let r = grade(&cpu_profile(), bytes, None);
    assert_eq!(
        outcomes(&r, &FIELDS),
        [Outcome::Right; 3],
        "{}",
        feedback(&r)
    );
}

#[test]
fn halving_the_whole_step_ignores_the_roofline() {
    // Each row right, and then "half the bytes, half the time" for the step.
    let (matmul, lm_head) = (
        fixture_row(&cpu_profile(), "matmul").0,
        fixture_row(&cpu_profile(), "lm_head").0,
    );
    let r = grade(
        &cpu_profile(),
        &bytes_section(matmul / 2.0, lm_head / 2.0, 50.0),
        None,
    );
    assert_eq!(
        outcomes(&r, &FIELDS),
        [Outcome::Right, Outcome::Right, Outcome::Wrong]
    );
    assert_reason_says(
        &r,
        "bytes.predicted_cut_pct",
        &["not half the step", "= 40.4%"],
    );
    insta::assert_snapshot!(feedback(&r));
}

#[test]
fn a_cut_for_rows_that_are_not_memory_bound() {
    // On the GPU run both rows are compute-bound: halving their shares is the natural slip.
    let cuda = cuda_profile();
    let (matmul, lm_head) = (
        fixture_row(&cuda, "matmul").0,
        fixture_row(&cuda, "lm_head").0,
    );
    let r = grade(
        &cuda,
        &bytes_section(matmul / 2.0, lm_head / 2.0, (matmul + lm_head) / 2.0),
        None,
    );
    assert_eq!(outcomes(&r, &FIELDS), [Outcome::Wrong; 3]);
    for id in ["bytes.matmul_cut_pct", "bytes.lm_head_cut_pct"] {
        let q = question(&r, id);
        assert!(
            q.reason
                .starts_with("a compute-bound row's time does not follow its bytes")
                && q.reason.contains("a 0% cut"),
            "{id}: {}",
            q.reason
        );
    }
    // And zero is right there.
    let r = grade(&cuda, &bytes_section(0.0, 0.0, 0.0), None);
    assert_eq!(
        outcomes(&r, &FIELDS),
        [Outcome::Right; 3],
        "{}",
        feedback(&r)
    );
    let r = grade(
        &cuda,
        &bytes_section(matmul / 2.0, lm_head / 2.0, (matmul + lm_head) / 2.0),
        None,
    );
    insta::assert_snapshot!(feedback(&r));
}

#[test]
fn an_impossible_cut_breaks_the_ceiling_rule() {
    // More than the whole row, and more than the two rows hold together.
    let r = grade(&cpu_profile(), &bytes_section(70.0, 10.0, 95.0), None);
    assert_eq!(
        outcomes(&r, &FIELDS),
        [Outcome::Wrong, Outcome::Right, Outcome::Wrong]
    );
    assert!(question(&r, "bytes.matmul_cut_pct")
        .reason
        .contains("more than the row's whole 60.9% share"));
    assert!(question(&r, "bytes.predicted_cut_pct")
        .reason
        .contains("more than the two rows hold together (80.9%)"));
}

#[test]
fn a_half_type_profile_is_no_starting_point() {
    // The learner ran exercise 3 with --dtype bf16: the prediction starts from f32.
    let bf16 = fixture_report("ex4-cpu-bf16.json");
    let r = grade(&bf16, &bytes_answers(&bf16), None);
    assert_eq!(outcomes(&r, &FIELDS), [Outcome::Wrong; 3]);
    assert!(question(&r, "bytes.matmul_cut_pct")
        .reason
        .contains("ran with bf16 weights: the prediction starts from the f32 profile"));
}

#[test]
fn the_measured_cut_is_shown_beside_the_prediction_and_not_graded() {
    let (f32_run, bf16_run) = (
        fixture_report("ex4-cpu-f32.json"),
        fixture_report("ex4-cpu-bf16.json"),
    );
    let r = grade(&f32_run, &bytes_answers(&f32_run), Some(&bf16_run));
    assert_eq!(
        outcomes(&r, &FIELDS),
        [Outcome::Right; 3],
        "{}",
        feedback(&r)
    );
    let note = r
        .notes
        .iter()
        .find(|n| n.starts_with("Measured with bf16 weights"))
        .unwrap_or_else(|| panic!("{:?}", r.notes));
    for part in [
        "one step went from",
        "`matmul`:",
        "`lm_head`:",
        "kernel `packed-",
        "-bf16`",
        "the kernel's arithmetic rate",
        "The rows the prediction leaves alone",
    ] {
        assert!(note.contains(part), "{part}: {note}");
    }
    // The same run twice is not a half-type run: said, not measured.
    let r = grade(&f32_run, &bytes_answers(&f32_run), Some(&f32_run));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("is not the half-type run of your profile")),
        "{:?}",
        r.notes
    );
    assert_eq!(outcomes(&r, &FIELDS), [Outcome::Right; 3]);
}

#[test]
fn a_cut_beyond_the_prediction_is_explained_by_the_half_type_kernels_own_peak() {
    // Since the bf16 products of 8 rows run on the dot product, the bf16 run's peak (359
    // GFLOP/s) is not the f32 one (206) that the prediction holds each row under.
    let (f32_run, bf16_run) = (
        fixture_report("ex4-dot-f32.json"),
        fixture_report("ex4-dot-bf16.json"),
    );
    let r = grade(&f32_run, &bytes_answers(&f32_run), Some(&bf16_run));
    assert_eq!(
        outcomes(&r, &FIELDS),
        [Outcome::Right; 3],
        "{}",
        feedback(&r)
    );
    let note = r
        .notes
        .iter()
        .find(|n| n.starts_with("Measured with bf16 weights"))
        .unwrap_or_else(|| panic!("{:?}", r.notes));
    for part in [
        "kernel `packed-avx512-bf16-dot`",
        "better than predicted",
        "the f32 peak, 206 GFLOP/s",
        "own peak on this machine is 359 GFLOP/s",
    ] {
        assert!(note.contains(part), "{part}: {note}");
    }
    insta::assert_snapshot!(feedback(&r));
}

#[test]
fn course_run_4_shows_the_columns_the_prediction_is_worked_from_and_the_commands() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reports");
    let exercise = fixtures.join("../exercise-4");
    let text =
        course_model::fewer_bytes::prediction_inputs(&fixtures.join("ex4-dot-f32.json"), &exercise)
            .unwrap();
    for part in [
        "ceilings: 34.8 GB/s read, 205.8 GFLOP/s peak; the ridge at 5.92 FLOP/byte",
        "  matmul       50.97%       3.95",
        "  lm_head      21.90%       3.96",
        "85.76%   memory",
        "--dtype bf16 --out ",
        "fixtures/exercise-4/results/bf16\n",
        "fixtures/reports/ex4-dot-f32.json ",
        "then in q8_0, blocks of 32 one-byte codes and one f16 scale (answers [quantized])",
        "32 / 16 for bf16, 32 / (q8_0's bits, scales included) for q8_0",
        "--dtype q8_0 --out ",
        "fixtures/exercise-4/results/q8_0\n",
        "fixtures/exercise-4/results/q8_0/report.json\n",
        "quantized at load",
    ] {
        assert!(text.contains(part), "{part:?} in:\n{text}");
    }
    assert!(!text.contains("predicted here, not measured"), "{text}");
    // `exercise-4/..` is tidied away; a bf16 profile is named as the wrong start; a missing file is named.
    assert!(!text.contains("/../"), "{text}");
    let bf16 = course_model::fewer_bytes::prediction_inputs(
        &fixtures.join("ex4-dot-bf16.json"),
        &exercise,
    )
    .unwrap();
    assert!(
        bf16.contains("Your profile ran with bf16 weights: predict from an f32 profile"),
        "{bf16}"
    );
    let err =
        course_model::fewer_bytes::prediction_inputs(&fixtures.join("missing.json"), &exercise)
            .unwrap_err();
    assert!(err.contains("missing.json"), "{err}");
}

#[test]
fn half_the_time_past_the_ridge_is_wrong_with_the_arithmetic() {
    // On the machine of `ex4-cpu-f32.json` both rows cross the ridge (3.95 FLOP/byte doubled is
    // 7.9, the ridge 194 / 32.2 = 6.0): the natural "half the bytes, half the time" overstates them.
    let f32_run = fixture_report("ex4-cpu-f32.json");
    let (matmul, lm_head) = (
        fixture_row(&f32_run, "matmul").0,
        fixture_row(&f32_run, "lm_head").0,
    );
    let r = grade(
        &f32_run,
        &bytes_section(matmul / 2.0, lm_head / 2.0, (matmul + lm_head) / 2.0),
        None,
    );
    assert_eq!(outcomes(&r, &FIELDS), [Outcome::Wrong; 3]);
    let q = question(&r, "bytes.matmul_cut_pct");
    assert!(
        q.reason
            .starts_with("half its time holds only while the row stays memory-bound")
            && q.reason.contains("past the ridge"),
        "{}",
        q.reason
    );
    // The right figures there.
    let r = grade(&f32_run, &bytes_answers(&f32_run), None);
    assert_eq!(
        outcomes(&r, &FIELDS),
        [Outcome::Right; 3],
        "{}",
        feedback(&r)
    );
    insta::assert_snapshot!(feedback(&r));
}

/// The CPU fixture on a machine with the same bandwidth and a peak of 1000 GFLOP/s (the ridge
/// at 36 FLOP/byte): its memory-bound rows keep their roofs and % of roofline, and stay below the
/// ridge in q8_0.
fn higher_ridge() -> String {
    let mut v: serde_json::Value = serde_json::from_str(&cpu_profile()).unwrap();
    v["ceilings"]["peak_gflops"] = 1000.0.into();
    v.to_string()
}

#[test]
fn the_right_q8_0_prediction() {
    let cpu = cpu_profile();
    let r = grade_quantized(&cpu, &quantized_answers(&cpu));
    assert_eq!(
        outcomes(&r, &QUANTIZED),
        [Outcome::Right; 4],
        "{}",
        quantized_feedback(&r)
    );
    assert_reason_says(
        &r,
        "quantized.bits_per_weight",
        &["34 bytes: 34 × 8 / 32 = 8.5 bits a weight"],
    );
    // Past the ridge at q8_0's width: the peak bounds the cut.
    assert_reason_says(
        &r,
        "quantized.matmul_cut_pct",
        &[
            "8.5 bits a weight instead of 32",
            "32 / 8.5 = 3.76 to 14.9",
            "past the ridge",
        ],
    );
    insta::assert_snapshot!(quantized_feedback(&r));
    // Where the rows stay memory-bound, each keeps 8.5/32 of its time.
    let high = higher_ridge();
    let r = grade_quantized(&high, &quantized_answers(&high));
    assert_eq!(outcomes(&r, &QUANTIZED), [Outcome::Right; 4]);
    assert_reason_says(
        &r,
        "quantized.matmul_cut_pct",
        &["still below the ridge", "60.9% × (1 − 8.5/32) = 44.7%"],
    );
}

#[test]
fn a_right_q8_0_prediction_in_other_words() {
    // Text, a percent sign, one decimal, and the sum of the rounded rows.
    let cpu = cpu_profile();
    let (m, l) = (q_cut(&cpu, "matmul", 8.5), q_cut(&cpu, "lm_head", 8.5));
    let (m, l) = (format!("{m:.1}"), format!("{l:.1}"));
    let total: f64 = m.parse::<f64>().unwrap() + l.parse::<f64>().unwrap();
    let quantized = format!(
        "[quantized]\nbits_per_weight = \"8.50\"\nmatmul_cut_pct = \"{m}%\"\nlm_head_cut_pct = \"{l} %\"\npredicted_cut_pct = {total:.1}\n"
    );
    let r = grade_quantized(&cpu, &quantized);
    assert_eq!(
        outcomes(&r, &QUANTIZED),
        [Outcome::Right; 4],
        "{}",
        quantized_feedback(&r)
    );
}

#[test]
fn forgetting_the_scales_bytes() {
    // 8 bits a weight, the int8 codes alone, and the cuts worked with it.
    let high = higher_ridge();
    let at = |bits| {
        let (m, l) = (q_cut(&high, "matmul", bits), q_cut(&high, "lm_head", bits));
        (m, l, m + l)
    };
    let (m, l, total) = at(8.0);
    let right = at(8.5);
    // The slip is a point off for matmul (a share of 60.9% × 1/64), within the tolerance for
    // lm_head's 20%.
    assert!(
        (m - right.0).abs() > 0.9 && (l - right.1).abs() < 0.5,
        "{m} {l} {right:?}"
    );
    let r = grade_quantized(&high, &quantized_section(8.0, m, l, total));
    assert_eq!(
        outcomes(&r, &QUANTIZED),
        [
            Outcome::Wrong,
            Outcome::Wrong,
            Outcome::Right,
            Outcome::Wrong
        ],
        "{}",
        quantized_feedback(&r)
    );
    assert_reason_says(
        &r,
        "quantized.bits_per_weight",
        &[
            "8 bits is the code alone: the scales' bytes are read too",
            "= 8.5 bits a weight",
        ],
    );
    assert_reason_says(
        &r,
        "quantized.matmul_cut_pct",
        &[
            "45.7% is the cut at 8 bits a weight, the codes alone",
            "8.5 bits a weight in all",
            "= 44.7%",
        ],
    );
    assert_reason_says(
        &r,
        "quantized.predicted_cut_pct",
        &["is the cut at 8 bits a weight, the codes alone", "= 59.4%"],
    );
    insta::assert_snapshot!(quantized_feedback(&r));
    // Where both rows pass the ridge the peak sets their cuts at either width: only the width
    // question tells the slip there.
    let cpu = cpu_profile();
    let (m, l) = (q_cut(&cpu, "matmul", 8.0), q_cut(&cpu, "lm_head", 8.0));
    let r = grade_quantized(&cpu, &quantized_section(8.0, m, l, m + l));
    assert_eq!(
        outcomes(&r, &QUANTIZED),
        [
            Outcome::Wrong,
            Outcome::Right,
            Outcome::Right,
            Outcome::Right
        ]
    );
}

/// Each row keeping 8.5/32 of its f32 time whatever bounds it (the bytes ratio alone), graded
/// on `report`; where no row stays memory-bound, the width is right and every cut wrong.
fn keeping_the_bytes_ratio(report: &str) -> ExerciseReport {
    let keep = 8.5 / 32.0;
    let (m, l) = (
        fixture_row(report, "matmul").0 * (1.0 - keep),
        fixture_row(report, "lm_head").0 * (1.0 - keep),
    );
    let r = grade_quantized(report, &quantized_section(8.5, m, l, m + l));
    assert_eq!(
        outcomes(&r, &QUANTIZED),
        [
            Outcome::Right,
            Outcome::Wrong,
            Outcome::Wrong,
            Outcome::Wrong
        ],
        "{}",
        quantized_feedback(&r)
    );
    r
}

#[test]
fn a_q8_0_cut_for_rows_that_are_not_memory_bound() {
    // On the GPU run both rows are compute-bound: 8.5/32 of their time is the natural slip.
    let cuda = cuda_profile();
    let r = keeping_the_bytes_ratio(&cuda);
    for id in ["quantized.matmul_cut_pct", "quantized.lm_head_cut_pct"] {
        assert_reason_says(
            &r,
            id,
            &[
                "a compute-bound row's time does not follow its bytes",
                "a 0% cut",
            ],
        );
    }
    insta::assert_snapshot!(quantized_feedback(&r));
    // Zero is right there.
    let r = grade_quantized(&cuda, &quantized_section(8.5, 0.0, 0.0, 0.0));
    assert_eq!(outcomes(&r, &QUANTIZED), [Outcome::Right; 4]);
}

#[test]
fn the_stored_width_past_the_ridge_is_wrong_with_the_arithmetic() {
    // On the CPU fixture both rows cross the ridge at q8_0: keeping 8.5/32 of each overstates.
    let cpu = cpu_profile();
    let r = keeping_the_bytes_ratio(&cpu);
    assert_reason_says(
        &r,
        "quantized.matmul_cut_pct",
        &[
            "8.5 / 32 of its time holds only while the row stays memory-bound",
            "past the ridge",
        ],
    );
}

#[test]
fn impossible_q8_0_numbers() {
    let high = higher_ridge();
    let share = |row| fixture_row(&high, row).0;
    // The block's bytes for the width; a negative cut; more than q8_0's bytes allow (all of the
    // row's time on 8.5/32 of the bytes leaves 8.5/32 of it); more than the rows hold.
    let r = grade_quantized(
        &high,
        &quantized_section(34.0, -5.0, share("lm_head") * 0.9, 90.0),
    );
    assert_eq!(outcomes(&r, &QUANTIZED), [Outcome::Wrong; 4]);
    assert_reason_says(
        &r,
        "quantized.bits_per_weight",
        &["34 is the block's bytes, not a weight's bits. A q8_0 block"],
    );
    assert_reason_says(
        &r,
        "quantized.matmul_cut_pct",
        &["a negative cut is a slower step"],
    );
    assert_reason_says(
        &r,
        "quantized.lm_head_cut_pct",
        &[
            "is more than q8_0's bytes allow",
            "20.0% × (1 − 8.5 / 32) = 14.7%",
        ],
    );
    assert_reason_says(
        &r,
        "quantized.predicted_cut_pct",
        &["more than the two rows hold together (80.9%)"],
    );
    insta::assert_snapshot!(quantized_feedback(&r));
}

#[test]
fn the_measured_q8_0_cut_is_shown_beside_its_prediction_and_not_graded() {
    let (f32_run, q8_run) = (
        fixture_report("ex4-q8-f32.json"),
        fixture_report("ex4-q8-q8_0.json"),
    );
    let quantized = quantized_answers(&f32_run);
    // Without the q8_0 run, the note says how to measure it.
    let r = grade_measured(&f32_run, &bytes_answers(&f32_run), &quantized, None, None);
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("Your predicted q8_0 cut is")
                && n.contains("--dtype q8_0 into")
                && n.contains("results/q8_0/report.json")),
        "{:?}",
        r.notes
    );
    let r = grade_measured(
        &f32_run,
        &bytes_answers(&f32_run),
        &quantized,
        None,
        Some(&q8_run),
    );
    assert_eq!(
        outcomes(&r, &QUANTIZED),
        [Outcome::Right; 4],
        "{}",
        quantized_feedback(&r)
    );
    let note = r
        .notes
        .iter()
        .find(|n| n.starts_with("Measured with q8_0 weights"))
        .unwrap_or_else(|| panic!("{:?}", r.notes));
    for part in [
        "one step went from 34.9 to 19.5 ms, a 44.3% cut",
        "`matmul`: 21.5 → 10.1 ms a step",
        "kernel `quant-avx512-vnni-q8_0`",
        "`lm_head`:",
        "The rows the prediction leaves alone",
    ] {
        assert!(note.contains(part), "{part}: {note}");
    }
    insta::assert_snapshot!(note);
    // The bf16 rung's note is its own: still asking for its run.
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("Your predicted cut is") && n.contains("results/bf16")),
        "{:?}",
        r.notes
    );
    // An f32 run where the q8_0 one belongs is said, not measured; so is a bf16 run.
    for wrong in [&f32_run, &fixture_report("ex4-cpu-bf16.json")] {
        let r = grade_measured(
            &f32_run,
            &bytes_answers(&f32_run),
            &quantized,
            None,
            Some(wrong),
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("is not the q8_0 run of your profile")
                    && n.contains("--dtype q8_0")),
            "{:?}",
            r.notes
        );
        assert!(!r.notes.iter().any(|n| n.starts_with("Measured with q8_0")));
    }
}
