//! Property tests over everything a submission controls: answer files, results files, the
//! progress file and the overrides file. Whatever the bytes, parsing and grading return a
//! result or a problem, never a panic.

mod support;

use grader::answers::Answers;
use grader::results::bench_report::BenchReport;
use grader::results::fused_check::FusedCheck;
use grader::results::profile_report::ProfileReport;
use grader::submission::Submission;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Text that looks like the files it is fed to: fragments of TOML and JSON glued at random.
fn toml_like() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "[quiz]\n", "[[top_ops]]\n", "[plan]\n", "[own]\n", "name = ", "share_pct = ", "ntq-1 = ", "verdict = ", "\"", "\"\"\"", "'",
        "=", "\n", "1e309", "-0", "0x1F", "nan", "inf", "[", "]", "{", "}", ",", ".", "é", "\u{0}", "true", "1979-05-27", "top_ops.0.name",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
}

fn json_like() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "{", "}", "[", "]", ",", ":", "\"schema\"", "\"profiler-report/1\"", "\"bench-report/1\"", "\"rows\"", "\"device\"", "\"cuda\"",
        "\"cpu\"", "\"name\"", "\"self_cpu_us\"", "\"self_cpu_pct\"", "\"totals\"", "\"comparison\"", "\"verdict\"", "\"faster\"", "1e308",
        "-1", "0", "null", "true", "\"max_abs_error\"", "\"runs\"", "\"metrics\"", "\"ttft_ms\"", "\"p90\"",
    ]);
    prop::collection::vec(atoms, 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn answers_parse_or_report(text in prop_oneof![toml_like(), any::<String>()]) {
        if let Ok(answers) = Answers::parse(&text, "answers.toml") {
            for path in ["quiz.ntq-1", "top_ops.0.name", "top_ops.0.share_pct", "plan.attack_first", "own.x", "a.b.c.d"] {
                let _ = answers.text(path);
                let _ = answers.number(path);
                let _ = answers.choices(path);
                let _ = answers.list_len(path);
            }
            let _ = answers.is_empty();
        }
    }

    #[test]
    fn results_parse_or_report(text in prop_oneof![json_like(), any::<String>()]) {
        let _ = ProfileReport::parse(&text, "report.json");
        let _ = BenchReport::parse(&text, "bench.json");
        let _ = FusedCheck::parse(&text, "fused_check.json");
        let _ = grader::progress::Progress::parse(&text);
        let _ = grader::overrides::Overrides::parse(&text, "overrides.toml");
    }

    #[test]
    fn numbers_in_a_valid_profile_never_panic(cpu in prop::collection::vec(-1e12f64..1e12, 1..6), pct in prop::collection::vec(-200f64..200.0, 1..6)) {
        let rows: Vec<serde_json::Value> = cpu.iter().zip(pct.iter().cycle()).enumerate().map(|(i, (c, p))| serde_json::json!({
            "name": format!("op{i}"), "self_cpu_us": c, "self_cpu_pct": p
        })).collect();
        let text = serde_json::json!({"schema": "profiler-report/1", "device": "cpu", "totals": {"self_cpu_us": cpu.iter().sum::<f64>()}, "rows": rows}).to_string();
        let _ = ProfileReport::parse(&text, "report.json");
    }

    /// Whole-submission grading with every answer file replaced by arbitrary text.
    #[test]
    fn grading_arbitrary_answers_never_panics(texts in prop::collection::vec(toml_like(), 7)) {
        let grader = support::grader();
        let mut files: BTreeMap<String, String> = support::perfect_files();
        for (i, text) in texts.into_iter().enumerate() {
            files.insert(format!("exercise-{}/answers.toml", i + 1), text);
        }
        for report in grader.grade_all(&Submission::from_texts("exercises", files)) {
            prop_assert!(report.points <= report.max_points + 1e-9);
            prop_assert!(report.points >= 0.0);
        }
    }
}
