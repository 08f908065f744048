//! Exercise 8's `[memory]`: the learner's prediction of their model's memory for a generation
//! at the given batch and context, graded by the course's arithmetic on the config the run
//! recorded (`grader::exercise_checks::memory`), with the measured peak beside it in a note.
//!
//! The fixture (`tests/fixtures/memory/ex8-smollm2.json`) is a real `--profile-memory` run of
//! solution 8 on synthetic-smollm2-135m: 134,515,008 parameters in f32, 30 layers, 3 KV heads of 64
//! dimensions, an f32 KV cache, 4 sequences × 256 positions. Its weights are 538,060,032 bytes,
//! its KV cache 2 × 30 × 3 × 64 × 4 × 256 × 4 = 47,185,920 bytes.

mod support;

use std::path::Path;

use formats::memory::MemoryRecord;
use grader::{render, ExerciseReport, Outcome};
use support::*;

const FIELDS: [&str; 3] = [
    "memory.weights_bytes",
    "memory.kv_cache_bytes",
    "memory.peak_bytes",
];

/// Exercise 8 graded with `memory` as its `[memory]` section and `record` as its
/// results/memory.json.
fn grade_with(memory: &str, record: &str) -> ExerciseReport {
    let mut files = perfect_files();
    files.insert(
        "exercise-8/answers.toml".into(),
        with_last_section(&perfect_ex8(), "memory", memory),
    );
    files.insert("exercise-8/results/memory.json".into(), record.to_string());
    grader().grade_exercise(&submission(files), 8)
}

/// The fixture's record with `edit` made, written as the program writes it.
fn record_with(edit: impl FnOnce(&mut MemoryRecord)) -> String {
    let mut record = MemoryRecord::from_json(&llama_memory(), Path::new("ex8-smollm2.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    edit(&mut record);
    record.to_json()
}

fn grade(memory: &str) -> ExerciseReport {
    grade_with(memory, &llama_memory())
}

/// [`grade_with`], its three outcomes asserted (the feedback shown when they differ).
fn graded_with(memory: &str, record: &str, expected: [Outcome; 3]) -> ExerciseReport {
    let r = grade_with(memory, record);
    assert_eq!(outcomes(&r, &FIELDS), expected, "{}", feedback(&r));
    r
}

/// [`grade`], its three outcomes asserted.
fn graded(memory: &str, expected: [Outcome; 3]) -> ExerciseReport {
    graded_with(memory, &llama_memory(), expected)
}

fn memory(weights: &str, kv_cache: &str, peak: &str) -> String {
    format!(
        "[memory]\nbatch = 4\ncontext = 256\nweights_bytes = {weights}\nkv_cache_bytes = {kv_cache}\npeak_bytes = {peak}\n"
    )
}

/// The `[memory]` questions and the measured note, so each snapshot shows the case it is named
/// for.
fn feedback(report: &ExerciseReport) -> String {
    let mut only = only(report, "memory.", |n| {
        n.starts_with("Measured") || n.contains("[memory]")
    });
    only.problems.clear();
    render::terminal(&only, false)
}

#[test]
fn the_fixture_is_what_the_program_writes() {
    // Exercise 8 writes results/memory.json with `formats::memory::MemoryRecord`: the fixture
    // reads back through that type and writes out unchanged.
    assert_eq!(record_with(|_| ()), llama_memory());
}

#[test]
fn a_record_of_another_schema_says_so_before_its_fields() {
    let foreign = llama_memory().replace(formats::memory::SCHEMA, "memory-prediction/0");
    let r = grade_with(PERFECT_MEMORY_EX8, &foreign);
    assert!(
        r.problems
            .iter()
            .any(|p| p.message.contains("\"memory-prediction/0\"")),
        "{:?}",
        r.problems
    );
    assert_eq!(outcomes(&r, &FIELDS), [Outcome::Wrong; 3]);
}

#[test]
fn the_right_prediction() {
    let r = graded(PERFECT_MEMORY_EX8, [Outcome::Right; 3]);
    assert!(r.passed, "{:#?}", r.questions);
    let note = r
        .notes
        .iter()
        .find(|n| n.starts_with("Measured"))
        .expect("the measured peak is shown");
    assert!(note.contains("699.4 MiB"), "{note}");
    insta::assert_snapshot!(feedback(&r));
}

#[test]
fn a_right_prediction_in_other_words() {
    // Units instead of bytes, rounded as a person would: 513.1 MiB is 538.03 MB, 45 MiB the
    // cache exactly, 0.58 GiB 622.8 MB.
    graded(
        &memory("5.4e8", "\"47.2 MB\"", "\"630_000_000\""),
        [Outcome::Right; 3],
    );
    let r = graded(
        &memory("\"513.1 MiB\"", "\"45 MiB\"", "\"0.58 GiB\""),
        [Outcome::Right; 3],
    );
    insta::assert_snapshot!(feedback(&r));
}

#[test]
fn a_kv_cache_without_its_factor_2() {
    // Only the keys: half the cache, and so a peak 23.6 MB short.
    let r = graded(
        &memory("538060032", "23592960", "601000000"),
        [Outcome::Right, Outcome::Wrong, Outcome::Right],
    );
    // On an f32 cache, half is either slip.
    assert_reason_says(
        &r,
        "memory.kv_cache_bytes",
        &["the factor 2 left out", "2 bytes an element"],
    );
    insta::assert_snapshot!(feedback(&r));
}

#[test]
fn weights_in_bf16_bytes_for_an_f32_run() {
    let r = graded(
        &memory("269030016", "47185920", "356000000"),
        [Outcome::Wrong, Outcome::Right, Outcome::Wrong],
    );
    assert_reason_says(
        &r,
        "memory.weights_bytes",
        &["2 bytes each (bf16 or f16)", "in f32"],
    );
    insta::assert_snapshot!(feedback(&r));
}

#[test]
fn a_bf16_run_predicted_in_f32_bytes() {
    // The same model loaded in bf16 on the CPU's packed kernels: weights 2 bytes each, the KV
    // cache still f32. The learner counted both in f32: the weights are twice too large, the
    // cache is right.
    let record = record_with(|r| {
        r.config.weight_bytes = 2;
        r.config.weights_dtype = "bf16".into();
    });
    let r = graded_with(
        &memory("538060032", "47185920", "625000000"),
        &record,
        [Outcome::Wrong, Outcome::Right, Outcome::Right],
    );
    assert!(
        question(&r, "memory.weights_bytes")
            .reason
            .contains("4 bytes each (f32), but this run loaded them in bf16"),
        "{}",
        question(&r, "memory.weights_bytes").reason
    );
    // And a bf16 cache where the run kept f32 is named as that slip (and as the factor 2).
    let r = grade_with(&memory("269030016", "23592960", "330000000"), &record);
    let kv = question(&r, "memory.kv_cache_bytes");
    assert!(
        kv.reason.contains("f32 whatever the weights' type"),
        "{}",
        kv.reason
    );
}

#[test]
fn the_query_heads_for_the_kv_heads() {
    // 9 query heads instead of 3 key/value heads: three times the cache.
    let r = grade(&memory("538060032", "141557760", "720000000"));
    let kv = question(&r, "memory.kv_cache_bytes");
    assert_eq!(kv.outcome, Outcome::Wrong);
    assert!(kv.reason.contains("all 9 query heads"), "{}", kv.reason);
}

#[test]
fn impossible_peaks() {
    // Below the weights and the cache that are both live at the peak.
    let r = grade(&memory("538060032", "47185920", "500000000"));
    let peak = question(&r, "memory.peak_bytes");
    assert_eq!(peak.outcome, Outcome::Wrong);
    assert!(peak.reason.contains("below the weights"), "{}", peak.reason);
    insta::assert_snapshot!(feedback(&r));
    // GB where MB was meant: far above anything the config allows.
    let r = grade(&memory("538060032", "47185920", "\"625 GB\""));
    let peak = question(&r, "memory.peak_bytes");
    assert_eq!(peak.outcome, Outcome::Wrong);
    assert!(peak.reason.contains("a unit slipped"), "{}", peak.reason);
    // Zero and negative figures.
    for nothing in ["0", "-538060032"] {
        let r = grade(&memory(nothing, "47185920", "625000000"));
        let weights = question(&r, "memory.weights_bytes");
        assert_eq!(weights.outcome, Outcome::Wrong, "{nothing}");
        assert!(
            weights.reason.contains("zero or fewer"),
            "{}",
            weights.reason
        );
    }
}

#[test]
fn text_that_is_not_bytes_is_a_problem_with_its_line() {
    let r = grade(&memory("\"about half a gig\"", "47185920", "625000000"));
    assert_eq!(question(&r, "memory.weights_bytes").outcome, Outcome::Wrong);
    let problem = r
        .problems
        .iter()
        .find(|p| p.message.contains("memory.weights_bytes"))
        .expect("a problem names the field");
    assert!(problem.location.is_some(), "{problem:?}");
}

#[test]
fn without_a_measurement_the_note_says_how_to_take_one() {
    let record = record_with(|r| r.measured = None);
    let r = graded_with(PERFECT_MEMORY_EX8, &record, [Outcome::Right; 3]);
    assert!(
        r.notes.iter().any(|n| n.contains("--profile-memory")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_batch_edited_after_the_run_is_noted_and_graded_at_the_runs() {
    let edited = PERFECT_MEMORY_EX8.replace("batch = 4", "batch = 8");
    let r = graded(&edited, [Outcome::Right; 3]);
    assert!(
        r.notes.iter().any(|n| n.contains("batch 8 (the run's: 4)")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_missing_record_fails_the_memory_questions_and_says_how_to_make_one() {
    let mut files = perfect_files();
    files.remove("exercise-8/results/memory.json");
    let r = grader().grade_exercise(&submission(files), 8);
    for id in FIELDS {
        assert_eq!(question(&r, id).outcome, Outcome::Wrong, "{id}");
    }
    assert!(
        r.problems
            .iter()
            .any(|p| p.next_step.contains("course run 8")),
        "{:?}",
        r.problems
    );
}

#[test]
fn a_tampered_record_is_refused() {
    let record = record_with(|r| r.config.kv_bytes = 3);
    let r = grade_with(PERFECT_MEMORY_EX8, &record);
    assert!(
        r.problems
            .iter()
            .any(|p| p.message.contains("does not take 3 bytes")),
        "{:?}",
        r.problems
    );
    assert_eq!(
        question(&r, "memory.kv_cache_bytes").outcome,
        Outcome::Wrong
    );
}

#[test]
fn a_second_tier_run_is_not_asked_the_memory_prediction() {
    // Phi-3, Gemma or a GGUF file the engine does not read runs through its own spans: the run
    // reads no config, writes no memory record, and the questions are left out rather than
    // failed.
    let mut files = perfect_files();
    files.remove("exercise-8/results/memory.json");
    let spans = llama_profile().replacen(
        "\"environment\": {",
        "\"environment\": {\"tier\": \"spans\", ",
        1,
    );
    files.insert("exercise-8/results/report.json".into(), spans);
    let r = grader().grade_exercise(&submission(files), 8);
    assert!(
        r.questions.iter().all(|q| !q.id.starts_with("memory.")),
        "{:#?}",
        r.questions
    );
    assert!(
        r.notes.iter().any(|n| n.contains("first-tier model only")),
        "{:?}",
        r.notes
    );
    assert!(r.passed, "{:#?}", r.questions);
}

#[test]
fn a_gguf_run_on_the_engine_is_not_asked_the_memory_prediction() {
    // A GGUF file on the first tier keeps its matrices quantized: parameters × bytes per weight
    // does not count its blocks, so the run writes no memory record and names the file it ran.
    let profile = |model: &str| {
        llama_profile().replacen(
            "\"environment\": {",
            &format!("\"environment\": {{\"tier\": \"engine\", \"model\": \"{model}\", "),
            1,
        )
    };
    for model in [
        "models/SmolLM2-135M-Q8_0.gguf",
        "prism-ml/Bonsai-8B-gguf/Bonsai-8B-Q1_0.GGUF",
    ] {
        let mut files = perfect_files();
        files.remove("exercise-8/results/memory.json");
        files.insert("exercise-8/results/report.json".into(), profile(model));
        let r = grader().grade_exercise(&submission(files), 8);
        assert!(
            r.questions.iter().all(|q| !q.id.starts_with("memory.")),
            "{model}: {:#?}",
            r.questions
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("asked of a safetensors checkpoint only")),
            "{model}: {:?}",
            r.notes
        );
        assert!(r.passed, "{model}: {:#?}", r.questions);
    }
    // A safetensors checkpoint whose name mentions GGUF, without its record, is still asked.
    for model in ["HuggingFaceTB/SmolLM2-135M", "models/gguf-ready"] {
        let mut files = perfect_files();
        files.remove("exercise-8/results/memory.json");
        files.insert("exercise-8/results/report.json".into(), profile(model));
        let r = grader().grade_exercise(&submission(files), 8);
        for id in FIELDS {
            assert_eq!(question(&r, id).outcome, Outcome::Wrong, "{model}: {id}");
        }
    }
}

#[test]
fn a_record_with_absurd_sizes_is_graded_without_overflowing() {
    // A hand-edited record: sizes whose products overflow any integer are computed in f64.
    let record = record_with(|r| {
        r.config.layers = u64::MAX;
        r.context = u64::MAX;
    });
    let r = grade_with(PERFECT_MEMORY_EX8, &record);
    assert_eq!(
        question(&r, "memory.kv_cache_bytes").outcome,
        Outcome::Wrong
    );
}
