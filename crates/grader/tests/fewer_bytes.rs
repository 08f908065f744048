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

mod support;

use grader::{render, ExerciseReport, Outcome};
use support::*;

const FIELDS: [&str; 3] = [
    "bytes.matmul_cut_pct",
    "bytes.lm_head_cut_pct",
    "bytes.predicted_cut_pct",
];

/// Exercise 4 graded with `report` as the learner's exercise-3 profile, `bytes` as its
/// `[bytes]` section and, when given, `measured` as the bf16 profile.
fn grade(report: &str, bytes: &str, measured: Option<&str>) -> ExerciseReport {
    let mut files = perfect_files();
    files.insert("exercise-3/results/report.json".into(), report.to_string());
    files.insert("exercise-4/results/budget.json".into(), budget_json(report));
    files.insert(
        "exercise-4/answers.toml".into(),
        with_last_section(&perfect_ex4(), "bytes", bytes),
    );
    if let Some(m) = measured {
        files.insert("exercise-4/results/bf16/report.json".into(), m.to_string());
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
    ] {
        assert!(text.contains(part), "{part:?} in:\n{text}");
    }
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
