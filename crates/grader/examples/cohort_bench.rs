//! Speed benchmark (not a test): generate a cohort of students with every exercise answered,
//! grade it as `course grade --due ... --late-penalty 10%/day --late-cutoff 3d` does, with the
//! similarity report, and print the time.
//!
//! cargo run -p grader --example cohort_bench -- [STUDENTS] [THREADS]
//!
//! Students alternate between folders (80%), .zip (10%) and .tar.gz (10%) submissions, with
//! answers varied so that reports differ. Each learner's profile differs in its last digits
//! and each writes their own route-why sentence (so the similarity report compares distinct
//! answers, its costly case), except every 50th, who copies the one before; every 4th learner's
//! submission time (a sidecar) is 0 to 4 days late. The goal is under 2 s for 500 students on 2
//! cores.

#[path = "../tests/support/mod.rs"]
mod support;

use grader::cohort::{grade_cohort, CohortOptions};
use grader::late::{parse_cutoff, parse_penalty, parse_time, LatePolicy};
use grader::overrides::Overrides;
use grader::similarity::Published;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let students: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(500);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let grader = support::grader();
    let dir = tempfile::tempdir().expect("temporary folder");
    let cohort = dir.path().join("cohort");
    let started = Instant::now();
    for i in 0..students {
        let mut files = support::perfect_files();
        // Vary the answers: every third student gets exercise 1 partly wrong, every fifth an
        // empty exercise 4, every seventh a different plan.
        if i % 3 == 0 {
            files.insert(
                "exercise-1/answers.toml".into(),
                "[quiz]\nntq-1 = \"Profile\"\nntq-2 = \"Profile\"\n".into(),
            );
        }
        if i % 5 == 0 {
            files.insert(
                "exercise-4/answers.toml".into(),
                "[illustrative]\nsaving_ms = \"\"\n".into(),
            );
        }
        if i % 7 == 0 {
            files.insert(
                "exercise-3/answers.toml".into(),
                support::perfect_ex3_cpu().replace("attack = \"lm_head\"", "attack = \"matmul\""),
            );
        }
        // Each learner's own measurements (every results file's numbers differ in their last
        // digits) and own words (every written answer); every 50th copies the previous learner.
        let own = if i % 50 == 49 { i - 1 } else { i };
        for (rel, text) in files.iter_mut() {
            if rel.ends_with(".json") {
                *text = perturbed(text, own);
            } else if rel.ends_with("answers.toml") {
                *text = own_words(text, own);
            }
        }
        let name = format!("student-{i:04}");
        if i % 4 == 0 {
            std::fs::create_dir_all(&cohort).unwrap();
            std::fs::write(
                cohort.join(format!("{name}.submitted_at")),
                format!("2027-01-{:02}T12:00:00Z", 15 + (i / 4) % 5),
            )
            .unwrap();
        }
        match i % 10 {
            8 => support::zip_files(
                &cohort.join(format!("{name}.zip")),
                &files,
                "exercises/",
                |_| {},
            ),
            9 => support::tar_gz_files(
                &cohort.join(format!("{name}.tar.gz")),
                &files,
                "exercises/",
                |_| {},
            ),
            _ => support::write_tree(&cohort.join(&name), &files),
        }
    }
    eprintln!("generated {students} students in {:.2?}", started.elapsed());
    let out = dir.path().join("grades");
    let started = Instant::now();
    let root = support::repo_root();
    let published = Published::load(&root, &root.join("crates/grader/key"));
    let overrides = Overrides::default();
    let mut options = CohortOptions::new(&out, &overrides, threads);
    options.late = Some(LatePolicy {
        due: parse_time("2027-01-15T23:59:00Z").unwrap(),
        percent_per_day: parse_penalty("10%/day").unwrap(),
        cutoff: Some(parse_cutoff("3d").unwrap()),
    });
    // NO_SIMILARITY=1: without the report, to see what it costs.
    options.published = std::env::var_os("NO_SIMILARITY")
        .is_none()
        .then_some(&published);
    let graded = grade_cohort(&grader, &cohort, &options).expect("grading");
    let elapsed = started.elapsed();
    let passed: usize = graded.students.iter().map(|s| s.passed()).sum();
    println!(
        "graded {} students ({} exercise passes) with {threads} threads in {:.3} s, gradebook and feedback written",
        graded.students.len(),
        passed,
        elapsed.as_secs_f64()
    );
    let late = graded
        .students
        .iter()
        .filter(|s| s.late.is_some_and(|l| l.days_late > 0))
        .count();
    let flagged = graded
        .students
        .iter()
        .filter(|s| !s.similarity.is_empty())
        .count();
    println!("late: {late}; flagged by the similarity report: {flagged}");
    if let Some(keep) = std::env::var_os("KEEP_GRADES") {
        for name in ["gradebook.csv", "similarity.md"] {
            std::fs::copy(out.join(name), std::path::Path::new(&keep).join(name)).unwrap();
        }
    }
}

/// The profile with every non-integer number changed in its last digits, by learner.
fn perturbed(report: &str, learner: usize) -> String {
    fn walk(v: &mut serde_json::Value, factor: f64) {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                let x = n.as_f64().unwrap();
                if x.fract() != 0.0 {
                    if let Some(y) = serde_json::Number::from_f64(x * factor) {
                        *n = y;
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|v| walk(v, factor)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|v| walk(v, factor)),
            _ => {}
        }
    }
    let mut value: serde_json::Value = serde_json::from_str(report).unwrap();
    walk(&mut value, 1.0 + (learner as f64 + 1.0) * 1e-12);
    serde_json::to_string_pretty(&value).unwrap()
}

/// Every written answer (five words or more) replaced by the learner's own sentence.
fn own_words(answers: &str, learner: usize) -> String {
    fn walk(v: &mut toml::Value, seed: &mut usize) {
        match v {
            toml::Value::String(s)
                if s.split_whitespace().count() >= 5
                    && grader::prediction::parse_time(s).is_none() =>
            {
                *seed += 7919;
                *s = sentence(*seed);
            }
            toml::Value::Table(t) => t.iter_mut().for_each(|(_, v)| walk(v, seed)),
            toml::Value::Array(a) => a.iter_mut().for_each(|v| walk(v, seed)),
            _ => {}
        }
    }
    let Ok(table) = toml::from_str::<toml::Table>(answers) else {
        return answers.to_string();
    };
    let mut value = toml::Value::Table(table);
    let mut seed = learner * 1_000_003;
    walk(&mut value, &mut seed);
    toml::to_string(&value).unwrap_or_else(|_| answers.to_string())
}

/// A learner's own sentence: 24 words drawn from the chapter's vocabulary by a seed.
fn sentence(learner: usize) -> String {
    const WORDS: [&str; 40] = [
        "latency",
        "percentile",
        "load",
        "traffic",
        "queue",
        "benchmark",
        "profile",
        "kernel",
        "engine",
        "code",
        "fix",
        "users",
        "service",
        "rate",
        "requests",
        "op",
        "time",
        "step",
        "measure",
        "whole",
        "system",
        "own",
        "gap",
        "vLLM",
        "table",
        "share",
        "matmul",
        "throughput",
        "target",
        "decode",
        "prefill",
        "batch",
        "answer",
        "question",
        "figure",
        "where",
        "why",
        "because",
        "so",
        "first",
    ];
    let mut state = (learner as u64).wrapping_mul(6364136223846793005) ^ 1442695040888963407;
    (0..24)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            WORDS[(state >> 33) as usize % WORDS.len()]
        })
        .collect::<Vec<_>>()
        .join(" ")
}
