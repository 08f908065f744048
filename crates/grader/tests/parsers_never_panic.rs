//! Property tests over everything a submission controls: answer files, results files, the
//! progress file and the overrides file. Whatever the bytes, parsing and grading return a
//! result or a problem, never a panic.

mod support;

use course_model::results::profile_report::ProfileReport;
use grader::answers::Answers;
use grader::results::bench_report::BenchReport;
use grader::results::fused_check::FusedCheck;
use grader::submission::Submission;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Text that looks like the files it is fed to: fragments of TOML and JSON glued at random.
fn toml_like() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "[quiz]\n",
        "[[top_ops]]\n",
        "[plan]\n",
        "[own]\n",
        "name = ",
        "share_pct = ",
        "ntq-1 = ",
        "verdict = ",
        "\"",
        "\"\"\"",
        "'",
        "=",
        "\n",
        "1e309",
        "-0",
        "0x1F",
        "nan",
        "inf",
        "[",
        "]",
        "{",
        "}",
        ",",
        ".",
        "é",
        "\u{0}",
        "true",
        "1979-05-27",
        "top_ops.0.name",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
}

fn json_like() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"schema\"",
        "\"profiler-report/7\"",
        "\"bench-report/4\"",
        "\"rows\"",
        "\"device\"",
        "\"cuda\"",
        "\"cpu\"",
        "\"name\"",
        "\"self_cpu_us\"",
        "\"self_cpu_pct\"",
        "\"totals\"",
        "\"comparison\"",
        "\"verdict\"",
        "\"faster\"",
        "1e308",
        "-1",
        "0",
        "null",
        "true",
        "\"max_abs_error\"",
        "\"runs\"",
        "\"metrics\"",
        "\"ttft_ms\"",
        "\"p90\"",
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
        let _ = course_model::progress::Progress::parse(&text);
        let _ = grader::overrides::Overrides::parse(&text, "overrides.toml");
    }

    #[test]
    fn numbers_in_a_valid_profile_never_panic(cpu in prop::collection::vec(-1e12f64..1e12, 1..6), pct in prop::collection::vec(-200f64..200.0, 1..6)) {
        let rows: Vec<serde_json::Value> = cpu.iter().zip(pct.iter().cycle()).enumerate().map(|(i, (c, p))| serde_json::json!({
            "name": format!("op{i}"), "self_cpu_us": c, "self_cpu_pct": p
        })).collect();
        let text = serde_json::json!({"schema": course_model::results::profile_report::SCHEMA, "device": "cpu", "totals": {"self_cpu_us": cpu.iter().sum::<f64>()}, "rows": rows}).to_string();
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Arbitrary bytes named .zip or .tar.gz, or a valid archive with bytes flipped: the archive
    /// reader reports a problem or reads what it can, and never panics.
    #[test]
    fn archives_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8)) {
        let dir = tempfile::tempdir().unwrap();
        let wanted = support::grader().wanted().clone();
        let limits = grader::Limits { max_file_bytes: 4096, max_archive_bytes: 1 << 20, max_entries: 100, max_depth: 6 };
        // A real zip, damaged at random places.
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        zip.start_file("exercises/exercise-1/answers.toml", zip::write::SimpleFileOptions::default()).unwrap();
        std::io::Write::write_all(&mut zip, support::PERFECT_EX1.as_bytes()).unwrap();
        let mut damaged = zip.finish().unwrap().into_inner();
        for (at, byte) in flips {
            let len = damaged.len();
            damaged[at % len] = byte;
        }
        for (name, content) in [("a.zip", &bytes), ("b.tar.gz", &bytes), ("c.zip", &damaged)] {
            let path = dir.path().join(name);
            std::fs::write(&path, content).unwrap();
            let kind = grader::archive::archive_kind(name).unwrap();
            let submission = grader::archive::read_archive(&path, kind, name, &wanted, &limits);
            let _ = support::grader().grade_all(&submission);
        }
    }
}

/// Deep nesting is a classic way to overflow a parser's stack: it must be refused, not crash.
#[test]
fn deeply_nested_files_are_refused_not_a_crash() {
    let depth = 100_000;
    let toml_text = format!("a = {}{}", "[".repeat(depth), "]".repeat(depth));
    let _ = Answers::parse(&toml_text, "answers.toml");
    let inline = format!("a = {}1{}", "{b = ".repeat(depth), "}".repeat(depth));
    let _ = Answers::parse(&inline, "answers.toml");
    let json = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert!(ProfileReport::parse(&json, "report.json").is_err());
    assert!(BenchReport::parse(&json, "bench.json").is_err());
}
