//! The similarity report of `course grade`: flags for the instructor to read, never penalties.
//! Three kinds of evidence, written to `OUT/similarity.md` and summed up in the gradebook's
//! `similarity` column:
//!
//! - **identical measurements**: two learners whose results file (`results/report.json`, ...)
//!   holds the same measured numbers to the last digit. Two machines never agree to the
//!   microsecond, so one copied the other (or both copied a third).
//! - **near-identical short answers**: written answers in `answers.toml` that are the same after
//!   normalising whitespace and case, or within a small edit distance of each other (`strsim`'s
//!   normalised Levenshtein). Answers that match published text are left out: the graded bank's
//!   and the book's quizzes (their model answers and options, so a multiple-choice answer never
//!   counts), the reference solutions' `answers.toml`, and the key folder's `published.toml`
//!   (the article's answer key, which learners may quote).
//! - **predictions made after the profile**: the grader's own check (`prediction.made_first`)
//!   found a prediction made once its results file existed; it is graded already, and listed
//!   here so that the instructor reads all the evidence in one place.

use crate::report::{ExerciseReport, Outcome};
use crate::submission::Submission;
use course_model::manifest::Manifest;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

/// Two answers at least this similar (1.0: the same text) are near-identical.
pub const NEAR_IDENTICAL: f64 = 0.9;
/// A written answer shorter than this (in words, after normalising) is too short to tell a copy
/// from a coincidence: `lm_head`, `Profile`, a number.
const MIN_WORDS: usize = 5;
/// A results file with fewer measured (non-integer) numbers than this is not compared.
const MIN_MEASUREMENTS: usize = 3;

/// Lower case, one space between words, no space at either end.
pub fn normalise(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

fn similar(a: &str, b: &str) -> f64 {
    let (la, lb) = (a.chars().count(), b.chars().count());
    let longest = la.max(lb);
    if longest == 0 {
        return 1.0;
    }
    // Levenshtein is at least the difference in length: skip what cannot reach the threshold.
    if (la.abs_diff(lb) as f64) > (1.0 - NEAR_IDENTICAL) * longest as f64 {
        return 0.0;
    }
    strsim::normalized_levenshtein(a, b)
}

/// How often each kind of character occurs (letters, digits, space, the rest folded into a few
/// bins): the Levenshtein distance of two texts is at least half the L1 distance of their
/// histograms, a bound that rules out most pairs before the quadratic comparison.
fn histogram(text: &str) -> [u16; 48] {
    let mut h = [0u16; 48];
    for c in text.chars() {
        let bin = match c {
            'a'..='z' => c as usize - 'a' as usize,
            '0'..='9' => 26 + c as usize - '0' as usize,
            ' ' => 36,
            _ => 37 + (c as usize % 11),
        };
        h[bin] = h[bin].saturating_add(1);
    }
    h
}

/// [`similar`], after the cheap bounds (length, then histograms) say it can reach the threshold.
fn similar_bounded(a: (&str, usize, &[u16; 48]), b: (&str, usize, &[u16; 48])) -> f64 {
    let longest = a.1.max(b.1);
    let allowed = (1.0 - NEAR_IDENTICAL) * longest as f64;
    if (a.1.abs_diff(b.1) as f64) > allowed {
        return 0.0;
    }
    let l1: u32 =
        a.2.iter()
            .zip(b.2)
            .map(|(x, y)| u32::from(x.abs_diff(*y)))
            .sum();
    if f64::from(l1) / 2.0 > allowed {
        return 0.0;
    }
    similar(a.0, b.0)
}

/// Text published where learners can read it, normalised, indexed by length.
#[derive(Debug, Default, Clone)]
pub struct Published {
    exact: HashSet<String>,
    by_length: BTreeMap<usize, Vec<String>>,
}

impl Published {
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Published {
        let mut published = Published::default();
        for text in texts {
            published.add(text);
        }
        published
    }

    fn add(&mut self, text: &str) {
        let n = normalise(text);
        if n.split(' ').count() < MIN_WORDS || !self.exact.insert(n.clone()) {
            return;
        }
        self.by_length.entry(n.chars().count()).or_default().push(n);
    }

    /// Every text of the course that learners can read: the bank (and the key's variant
    /// quizzes), the book's quizzes, the reference solutions' answers, and the key folder's
    /// TOML files (its `published.toml` lists answers published elsewhere).
    pub fn load(root: &Path, key_dir: &Path) -> Published {
        let mut published = Published::default();
        let mut files = Vec::new();
        for dir in [
            root.join("crates/grader/bank"),
            root.join("book/src/quizzes"),
            root.join("crates/grader/key"),
            key_dir.to_path_buf(),
            key_dir.join("quizzes"),
        ] {
            files.extend(toml_files(&dir));
        }
        if let Ok(read) = std::fs::read_dir(root.join("solutions")) {
            for item in read.flatten() {
                files.push(item.path().join("answers.toml"));
            }
        }
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            if let Ok(value) = toml::from_str::<toml::Value>(&text) {
                let mut texts = Vec::new();
                toml_strings(&value, "", &mut texts);
                for (_, t) in texts {
                    published.add(&t);
                }
            }
        }
        published
    }

    /// The answer is published text, or near enough to it.
    pub fn matches(&self, normalised: &str) -> bool {
        if self.exact.contains(normalised) {
            return true;
        }
        let n = normalised.chars().count();
        let slack = ((1.0 - NEAR_IDENTICAL) * n as f64 / NEAR_IDENTICAL).ceil() as usize;
        self.by_length
            .range(n.saturating_sub(slack)..=n + slack)
            .flat_map(|(_, texts)| texts)
            .any(|t| similar(normalised, t) >= NEAR_IDENTICAL)
    }
}

fn toml_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// Every string of a TOML document, with its dotted key.
fn toml_strings(value: &toml::Value, key: &str, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::String(s) => out.push((key.to_string(), s.clone())),
        toml::Value::Table(table) => {
            for (k, v) in table {
                let key = if key.is_empty() {
                    k.clone()
                } else {
                    format!("{key}.{k}")
                };
                toml_strings(v, &key, out);
            }
        }
        toml::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                toml_strings(v, &format!("{key}.{i}"), out);
            }
        }
        _ => {}
    }
}

/// What one submission brings to the comparison.
#[derive(Debug, Clone, Default)]
pub struct Fingerprint {
    pub student: String,
    /// Results file → its non-integer numbers, in the file's order, as written.
    pub measurements: Vec<(String, Vec<String>)>,
    /// `exercise-6/answers.toml: article-double-traffic` → (as written, normalised): the learner's
    /// own written answers (published text and short answers left out).
    pub answers: Vec<(String, String, String)>,
}

/// Read what the comparison needs from one submission.
pub fn fingerprint(
    student: &str,
    submission: &Submission,
    manifest: &Manifest,
    published: &Published,
) -> Fingerprint {
    let mut print = Fingerprint {
        student: student.to_string(),
        ..Fingerprint::default()
    };
    let mut seen = BTreeSet::new();
    for exercise in &manifest.exercises {
        for role in exercise.results.keys() {
            // Two exercises (or roles) may read the same file: compare it once.
            let Some(rel) = exercise
                .result_path(role)
                .filter(|rel| seen.insert(rel.clone()))
            else {
                continue;
            };
            let Some(Ok(text)) = submission.files.get(&rel) else {
                continue;
            };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
                continue;
            };
            let mut numbers = Vec::new();
            measured_numbers(&value, &mut numbers);
            if numbers.len() >= MIN_MEASUREMENTS {
                print.measurements.push((rel, numbers));
            }
        }
        let rel = exercise.answers_path();
        let Some(Ok(text)) = submission.files.get(&rel) else {
            continue;
        };
        let Ok(value) = toml::from_str::<toml::Value>(text) else {
            continue;
        };
        let mut texts = Vec::new();
        toml_strings(&value, "", &mut texts);
        for (key, answer) in texts {
            let n = normalise(&answer);
            // A time the exercise wrote (`prediction.made_at`) is the machine's, not an answer.
            if n.split(' ').count() < MIN_WORDS
                || crate::prediction::parse_time(&answer).is_some()
                || published.matches(&n)
            {
                continue;
            }
            print.answers.push((format!("{rel}: {key}"), answer, n));
        }
    }
    print
}

/// Numbers with a fractional part (times, shares, rates: what a machine measures), as written.
fn measured_numbers(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64() {
                if f.fract() != 0.0 {
                    out.push(n.to_string());
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| measured_numbers(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| measured_numbers(v, out)),
        _ => {}
    }
}

/// One piece of evidence, naming the learners it concerns.
#[derive(Debug, Clone, PartialEq)]
pub enum Evidence {
    /// The same measured numbers in the same results file.
    Measurements {
        file: String,
        students: Vec<String>,
        count: usize,
        first: Vec<String>,
    },
    /// The same written answer (after normalising whitespace and case).
    SameAnswer {
        question: String,
        students: Vec<String>,
        answer: String,
    },
    /// Two written answers within a small edit distance.
    NearAnswer {
        question: String,
        students: [String; 2],
        similarity: f64,
        answers: [String; 2],
    },
}

impl Evidence {
    pub fn students(&self) -> &[String] {
        match self {
            Evidence::Measurements { students, .. } | Evidence::SameAnswer { students, .. } => {
                students
            }
            Evidence::NearAnswer { students, .. } => students,
        }
    }

    fn tag(&self) -> &'static str {
        match self {
            Evidence::Measurements { .. } => "same-measurements",
            Evidence::SameAnswer { .. } | Evidence::NearAnswer { .. } => "similar-answer",
        }
    }
}

/// A prediction the grader found made after the profile it predicts.
#[derive(Debug, Clone, PartialEq)]
pub struct LatePrediction {
    pub student: String,
    pub exercise: u32,
    pub reason: String,
}

/// The whole report: groups of learners linked by evidence, and late predictions.
#[derive(Debug, Clone, Default)]
pub struct SimilarityReport {
    /// Each group: its learners, and every piece of evidence between them.
    pub groups: Vec<(Vec<String>, Vec<Evidence>)>,
    pub predictions: Vec<LatePrediction>,
}

/// One distinct normalised answer: its text, (its learners, as first written), its length in
/// characters and its histogram.
type Distinct<'a> = (&'a str, &'a (Vec<&'a str>, &'a str), usize, [u16; 48]);

/// Compare every pair of learners (in parallel) and gather the grader's late predictions from
/// each learner's reports (`results`: the learner's id and reports, as the cohort graded them).
pub fn compare(prints: &[Fingerprint], results: &[(&str, &[ExerciseReport])]) -> SimilarityReport {
    use rayon::prelude::*;
    let mut evidence = Vec::new();
    // Identical measurements: group by the file and its numbers.
    let mut by_numbers: HashMap<(&str, &[String]), Vec<&str>> = HashMap::new();
    for p in prints {
        for (file, numbers) in &p.measurements {
            by_numbers
                .entry((file.as_str(), numbers.as_slice()))
                .or_default()
                .push(&p.student);
        }
    }
    for ((file, numbers), students) in by_numbers {
        if students.len() > 1 {
            evidence.push(Evidence::Measurements {
                file: file.to_string(),
                students: sorted(students),
                count: numbers.len(),
                first: numbers.iter().take(3).cloned().collect(),
            });
        }
    }
    // Written answers, question by question: equal ones grouped, then near ones paired.
    let mut by_question: BTreeMap<&str, BTreeMap<&str, (Vec<&str>, &str)>> = BTreeMap::new();
    for p in prints {
        for (question, answer, normalised) in &p.answers {
            by_question
                .entry(question)
                .or_default()
                .entry(normalised)
                .or_insert_with(|| (Vec::new(), answer))
                .0
                .push(&p.student);
        }
    }
    for (question, answers) in &by_question {
        for (students, answer) in answers.values() {
            if students.len() > 1 {
                evidence.push(Evidence::SameAnswer {
                    question: question.to_string(),
                    students: sorted(students.clone()),
                    answer: answer.to_string(),
                });
            }
        }
        let distinct: Vec<Distinct<'_>> = answers
            .iter()
            .map(|(n, v)| (*n, v, n.chars().count(), histogram(n)))
            .collect();
        let near: Vec<Evidence> = (0..distinct.len())
            .into_par_iter()
            .flat_map_iter(|i| {
                let distinct = &distinct;
                (i + 1..distinct.len()).filter_map(move |j| {
                    let (a, (sa, ta), la, ha) = &distinct[i];
                    let (b, (sb, tb), lb, hb) = &distinct[j];
                    let score = similar_bounded((a, *la, ha), (b, *lb, hb));
                    (score >= NEAR_IDENTICAL).then(|| Evidence::NearAnswer {
                        question: question.to_string(),
                        students: [sa[0].to_string(), sb[0].to_string()],
                        similarity: (score * 100.0).round() / 100.0,
                        answers: [ta.to_string(), tb.to_string()],
                    })
                })
            })
            .collect();
        evidence.extend(near);
    }
    let predictions = results
        .iter()
        .flat_map(|&(student, reports)| {
            reports.iter().flat_map(move |r| {
                r.questions
                    .iter()
                    .filter(|q| {
                        q.id == "prediction.made_first"
                            && q.outcome == Outcome::Wrong
                            && q.reason.starts_with("made ")
                    })
                    .map(move |q| LatePrediction {
                        student: student.to_string(),
                        exercise: r.exercise,
                        reason: q.reason.clone(),
                    })
            })
        })
        .collect();
    SimilarityReport {
        groups: group(evidence),
        predictions,
    }
}

fn sorted(students: Vec<&str>) -> Vec<String> {
    let mut s: Vec<String> = students.into_iter().map(str::to_string).collect();
    s.sort();
    s.dedup();
    s
}

/// Join the learners that share evidence into groups (connected components).
fn group(evidence: Vec<Evidence>) -> Vec<(Vec<String>, Vec<Evidence>)> {
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    fn find(parent: &mut BTreeMap<String, String>, s: &str) -> String {
        let mut root = s.to_string();
        while let Some(p) = parent.get(&root).filter(|p| **p != root) {
            root = p.clone();
        }
        parent.insert(s.to_string(), root.clone());
        root
    }
    for e in &evidence {
        let students = e.students();
        let first = find(&mut parent, &students[0]);
        for s in &students[1..] {
            let root = find(&mut parent, s);
            if root != first {
                parent.insert(root, first.clone());
            }
        }
    }
    let mut groups: BTreeMap<String, (BTreeSet<String>, Vec<Evidence>)> = BTreeMap::new();
    for e in evidence {
        let root = find(&mut parent, &e.students()[0]);
        let g = groups.entry(root).or_default();
        g.0.extend(e.students().iter().cloned());
        g.1.push(e);
    }
    let mut out: Vec<(Vec<String>, Vec<Evidence>)> = groups
        .into_values()
        .map(|(students, mut evidence)| {
            evidence.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            (students.into_iter().collect(), evidence)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

impl SimilarityReport {
    /// The gradebook's `similarity` column of one learner: `same-measurements:bob
    /// similar-answer:carol prediction-after:3`.
    pub fn column(&self, student: &str) -> String {
        let mut tags = BTreeSet::new();
        for (students, evidence) in &self.groups {
            if !students.iter().any(|s| s == student) {
                continue;
            }
            for e in evidence {
                let names = e.students();
                if names.iter().any(|s| s == student) {
                    for other in names.iter().filter(|s| *s != student) {
                        tags.insert(format!("{}:{other}", e.tag()));
                    }
                }
            }
        }
        for p in self.predictions.iter().filter(|p| p.student == student) {
            tags.insert(format!("prediction-after:{}", p.exercise));
        }
        tags.into_iter().collect::<Vec<_>>().join(" ")
    }

    pub fn markdown(&self, students: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Similarity report\n");
        let _ = writeln!(
            out,
            "Flags for the instructor to read, never penalties: no grade below was changed by them. \
             {students} submissions compared; {} group{} of learners share evidence, {} prediction{} \
             made after the profile.\n",
            self.groups.len(),
            if self.groups.len() == 1 { "" } else { "s" },
            self.predictions.len(),
            if self.predictions.len() == 1 { " was" } else { "s were" },
        );
        let _ = writeln!(
            out,
            "Answers that match published text (the bank's and the book's quizzes, the reference \
             solutions, the key folder's published.toml) and answers under {MIN_WORDS} words are \
             not compared. Near-identical: {} or more similar after normalising whitespace and case \
             (normalised Levenshtein).\n",
            NEAR_IDENTICAL
        );
        for (i, (students, evidence)) in self.groups.iter().enumerate() {
            let _ = writeln!(out, "## Group {}: {}\n", i + 1, students.join(", "));
            for e in evidence {
                match e {
                    Evidence::Measurements {
                        file,
                        students,
                        count,
                        first,
                    } => {
                        let _ = writeln!(
                            out,
                            "- **Identical measurements** in `{file}`: {} hold the same {count} measured \
                             numbers to the last digit (the first: {}).",
                            students.join(", "),
                            first.join(", ")
                        );
                    }
                    Evidence::SameAnswer {
                        question,
                        students,
                        answer,
                    } => {
                        let _ = writeln!(
                            out,
                            "- **The same answer** to `{question}` from {}:\n  > {}",
                            students.join(", "),
                            one_line(answer)
                        );
                    }
                    Evidence::NearAnswer {
                        question,
                        students,
                        similarity,
                        answers,
                    } => {
                        let _ = writeln!(
                            out,
                            "- **Near-identical answers** to `{question}` ({similarity} similar):\n  \
                             - {}: {}\n  - {}: {}",
                            students[0],
                            one_line(&answers[0]),
                            students[1],
                            one_line(&answers[1])
                        );
                    }
                }
            }
            let _ = writeln!(out);
        }
        if !self.predictions.is_empty() {
            let _ = writeln!(out, "## Predictions made after the profile\n");
            let _ = writeln!(
                out,
                "Already graded wrong by the exercise's check; listed beside the rest.\n"
            );
            for p in &self.predictions {
                let _ = writeln!(
                    out,
                    "- {}, exercise {}: {}",
                    p.student,
                    p.exercise,
                    one_line(&p.reason)
                );
            }
        }
        out
    }
}

fn one_line(text: &str) -> String {
    normalise_spaces(text).replace('`', "'")
}

fn normalise_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_and_spacing_do_not_hide_a_copy_and_short_texts_are_not_compared() {
        assert_eq!(
            normalise("  A  Benchmark:\n whole SYSTEM "),
            "a benchmark: whole system"
        );
        let published = Published::from_texts(["Profile your own code: the fix will be code."]);
        assert!(published.matches(&normalise("profile your OWN code: the fix will be code")));
        assert!(!published.matches(&normalise("benchmark the service at twice the rate please")));
        // Too short to be published text: never matches.
        assert!(!Published::from_texts(["Profile"]).matches("profile"));
    }
}
