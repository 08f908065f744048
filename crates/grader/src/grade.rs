//! The grader: the manifest, the question bank and the answer key, loaded and cross-checked
//! once; then any number of submissions graded against them without touching the disk.

use crate::answers::Answers;
use crate::exercise_checks::{self, Ctx};
use crate::key::{ExerciseKey, Key, DEFAULT_KEY_DIR};
use crate::problem::{Location, Problem, ProblemKind};
use crate::report::ExerciseReport;
use crate::submission::{FileState, Limits, Submission, Wanted};
use course_model::manifest::{CheckKind, Manifest, MANIFEST_PATH};
use course_model::quiz::QuestionBank;
use std::path::Path;

#[derive(Debug, Clone)]
pub struct Grader {
    pub manifest: Manifest,
    pub bank: QuestionBank,
    pub key: Key,
    pub limits: Limits,
    wanted: Wanted,
}

/// The course itself is broken (manifest, quiz files or key): not a student's problem.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

impl Grader {
    /// Load everything from a course root; `key_dir` replaces `crates/grader/key`.
    pub fn load(root: &Path, key_dir: Option<&Path>) -> Result<Grader, SetupError> {
        let manifest = Manifest::load(&root.join(MANIFEST_PATH)).map_err(|e| SetupError(e.0))?;
        let key_dir = key_dir
            .map(Path::to_path_buf)
            .unwrap_or_else(|| root.join(DEFAULT_KEY_DIR));
        let key = Key::load(&key_dir, &manifest).map_err(|e| SetupError(e.0))?;
        let names: Vec<String> = manifest
            .exercises
            .iter()
            .flat_map(|e| e.quizzes.clone())
            .collect();
        let bank = QuestionBank::load(&key.quiz_dirs(root), &names).map_err(|e| SetupError(e.0))?;
        Grader::new(manifest, bank, key)
    }

    /// Assemble a grader, checking that every question the manifest asks is in the bank.
    pub fn new(manifest: Manifest, bank: QuestionBank, key: Key) -> Result<Grader, SetupError> {
        for exercise in &manifest.exercises {
            if exercise.check != CheckKind::Quiz {
                continue;
            }
            let file = &exercise.quizzes[0];
            let Some(quiz) = bank.file(file) else {
                return Err(SetupError(format!("exercise {} asks from the quiz file {file}, which was not loaded; fix exercises/info.toml", exercise.number)));
            };
            // Any question of the file may be asked (drawn from its pool), so every id must fit
            // an answers.toml key.
            for id in quiz.questions.iter().map(|q| &q.id) {
                if id.contains('.') {
                    return Err(SetupError(format!("exercise {}: question id `{id}` in {file} contains a dot, which answers.toml keys cannot hold", exercise.number)));
                }
            }
            // The fixed questions exist and the pool is large enough for the draw.
            course_model::quiz_variant::asked(exercise, quiz, None).map_err(|e| SetupError(e.0))?;
        }
        let wanted = Wanted::from_manifest(&manifest);
        Ok(Grader {
            manifest,
            bank,
            key,
            limits: Limits::default(),
            wanted,
        })
    }

    pub fn wanted(&self) -> &Wanted {
        &self.wanted
    }

    /// Grade every exercise of a submission.
    pub fn grade_all(&self, submission: &Submission) -> Vec<ExerciseReport> {
        self.manifest
            .exercises
            .iter()
            .map(|e| self.grade_exercise(submission, e.number))
            .collect()
    }

    /// Grade one exercise. Never fails: every problem with the files is in the report.
    pub fn grade_exercise(&self, submission: &Submission, number: u32) -> ExerciseReport {
        let Some(info) = self.manifest.exercise(number) else {
            let mut report = ExerciseReport::new(number, format!("exercise {number}"), 1.0);
            report.problems.push(Problem::new(
                ProblemKind::Missing,
                None,
                format!("there is no exercise {number}"),
                "see `course list`",
            ));
            return report;
        };
        let Some(key) = self.key.exercise(number) else {
            // Key::load refuses a key without a section per exercise; a key built for another
            // manifest still must not bring the grader down.
            let mut report = ExerciseReport::new(number, info.title.clone(), 1.0);
            report.problems.push(Problem::new(
                ProblemKind::Missing,
                None,
                format!("the answer key has no [exercise-{number}] section"),
                "tell the instructor: the key does not match exercises/info.toml",
            ));
            return report;
        };
        let mut report = ExerciseReport::new(number, info.title.clone(), key.pass_mark());
        report.solution_viewed_early = submission
            .progress
            .as_ref()
            .is_some_and(|p| p.exercise(number).solution_viewed_before_pass);
        let answers_rel = info.answers_path();
        let shown = submission.display(&answers_rel);
        let answers = match submission.file(&answers_rel) {
            FileState::Text(text) => match Answers::parse(text, &shown) {
                Ok(answers) => Some(answers),
                Err(mut problem) => {
                    problem.next_step = problem
                        .next_step
                        .replace("course reset N", &format!("course reset {number}"));
                    report.problems.push(problem);
                    None
                }
            },
            FileState::Missing => {
                let (message, next) = if submission.has_folder(&info.folder_name()) {
                    (
                        "answers.toml is missing",
                        format!("restore it with `course reset {number}`"),
                    )
                } else {
                    (
                        "the exercise folder was not submitted",
                        format!("include {}/ in the submission", info.folder_name()),
                    )
                };
                let location = if submission.has_folder(&info.folder_name()) {
                    shown.clone()
                } else {
                    submission.display(&info.folder_name())
                };
                report.problems.push(Problem::new(
                    ProblemKind::Missing,
                    Some(Location::file(location)),
                    message,
                    next,
                ));
                None
            }
            FileState::Problem(problem) => {
                report.problems.push(problem.clone());
                None
            }
        };
        // One set of mechanism thresholds for every exercise that judges a mechanism.
        let mechanism = self
            .key
            .mechanism()
            .cloned()
            .unwrap_or_else(crate::key::default_mechanism);
        let mut ctx = Ctx {
            info,
            submission,
            bank: &self.bank,
            answers,
            report,
        };
        match key {
            ExerciseKey::Quiz(k) => exercise_checks::quiz::check(&mut ctx, k),
            ExerciseKey::BenchVerdict(k) => exercise_checks::bench_verdict::check(&mut ctx, k),
            ExerciseKey::TopOps(k) => exercise_checks::top_ops::check(&mut ctx, k, &mechanism),
            ExerciseKey::Budget(k) => exercise_checks::budget::check(&mut ctx, k, &mechanism),
            ExerciseKey::Fuse(k) => exercise_checks::fuse::check(&mut ctx, k, &mechanism),
            ExerciseKey::Traffic(k) => exercise_checks::traffic::check(&mut ctx, k),
        }
        let mut report = ctx.report;
        report.total();
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract with the bank: every question the manifest asks is in the graded bank's quiz
    /// files, with an id. Skipped (with a note) while a quiz file is still being written.
    #[test]
    fn the_real_course_loads_when_its_quiz_files_exist() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let manifest = Manifest::load(&root.join(MANIFEST_PATH)).unwrap();
        let missing: Vec<String> = manifest
            .exercises
            .iter()
            .flat_map(|e| e.quizzes.clone())
            .filter(|q| !course_model::quiz::bank_dir(&root).join(q).is_file())
            .collect();
        if !missing.is_empty() {
            eprintln!("skipped: bank quiz files not written yet: {missing:?}");
            return;
        }
        let grader = Grader::load(&root, None).unwrap_or_else(|e| panic!("{e}"));
        // The untouched templates grade without a single malformed or wrong-type problem.
        let files = grader
            .manifest
            .exercises
            .iter()
            .map(|e| (e.answers_path(), e.answers_template.clone()));
        let submission = Submission::from_texts("exercises", files);
        for report in grader.grade_all(&submission) {
            assert!(!report.passed);
            assert!(
                report
                    .problems
                    .iter()
                    .all(|p| p.kind == ProblemKind::Missing),
                "{:?}",
                report.problems
            );
        }
    }
}
