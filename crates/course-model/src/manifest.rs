//! The exercise manifest, `exercises/info.toml`: the one source of truth for exercise metadata.
//!
//! `course` (list, run, check, hint, reset, solution), the grader and the cohort gradebook all
//! read it; nothing else lists the exercises. The format is documented at the top of the file.

use crate::text::line_column;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the manifest lives, relative to the course root.
pub const MANIFEST_PATH: &str = "exercises/info.toml";

/// Which check routine grades an exercise (see `crate::exercise_checks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckKind {
    /// Quiz questions answered by id under `[quiz]` (exercises 1 and 6).
    Quiz,
    /// A benchmark verdict checked against `results/bench.json` (exercise 2).
    BenchVerdict,
    /// The top three ops of the learner's own profile, and a sentence (exercise 3).
    TopOps,
    /// Savings arithmetic on the illustrative table and on the learner's profile (exercise 4).
    Budget,
    /// Fused-op correctness, before/after profiles and the benchmark verdict (exercise 5).
    Fuse,
    /// P90 TTFT at a rate and at twice the rate against a target (exercise 7).
    Traffic,
}

/// One exercise's entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExerciseInfo {
    pub number: u32,
    /// Short machine name, e.g. `name-the-question`.
    pub name: String,
    /// Title as the book shows it.
    pub title: String,
    /// The exercise folder, relative to the course root.
    pub dir: String,
    /// Its cargo package (`cargo run -p PACKAGE`).
    pub package: String,
    /// The reference solution's folder, relative to the course root.
    pub solution_dir: String,
    /// The book page of the exercise, relative to the course root.
    pub chapter: String,
    /// The chapters to read first.
    #[serde(default)]
    pub reading: Vec<String>,
    /// Whether the package has its own tests (`cargo test -p PACKAGE`); without, `course check` grades without a build.
    pub test: bool,
    /// The check routine that grades `answers.toml` and the results.
    pub check: CheckKind,
    /// Quiz files (in the grader's bank, `crates/grader/bank/`) whose questions this exercise asks.
    #[serde(default)]
    pub quizzes: Vec<String>,
    /// Quiz question ids asked of every learner, in order (quiz checks only).
    #[serde(default)]
    pub questions: Vec<String>,
    /// Quiz checks: how many more questions each learner is asked, drawn with their id from
    /// the quiz file's other questions (its pool) and asked before `questions`
    /// (`crate::quiz_variant`). 0 asks `questions` only.
    #[serde(default)]
    pub draw: usize,
    /// Results files by role, relative to the exercise folder (`../exercise-3/...` reaches a
    /// sibling exercise's results).
    #[serde(default)]
    pub results: BTreeMap<String, String>,
    /// Hints, revealed one at a time by `course hint N`.
    pub hints: Vec<String>,
    /// The starting `answers.toml`: its comments document the answer schema.
    pub answers_template: String,
    /// What `course-dev check` proves of this exercise (the course's lint of itself; learners
    /// never need it): the `[exercises.dev_check]` table.
    #[serde(default)]
    pub dev_check: DevCheck,
}

/// The placeholder in [`DevCheck::args`] that `course-dev check` replaces with the address of
/// the server it started for the run ([`DevCheck::server`]).
pub const BASE_URL_PLACEHOLDER: &str = "{base_url}";

/// How `course-dev check` proves an exercise sound: its untouched copy fails `course check N`
/// with a message that says what to do, its solution, run for real, passes. Each field is what
/// the check cannot read off the rest of the entry (the texts a failure must show, the small
/// sizes a solution runs at in a test). Every list is empty, and `args` absent, by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevCheck {
    /// Texts that the untouched exercise's failing `course check N` must print (each one,
    /// verbatim): what is wrong and what to do next.
    #[serde(default)]
    pub untouched_says: Vec<String>,
    /// Texts that the untouched exercise's program must print when standard input is not a
    /// terminal; empty: that run is not checked.
    #[serde(default)]
    pub no_terminal_says: Vec<String>,
    /// The arguments the solution's program is run with, after `--exercise-dir DIR` (small sizes,
    /// the synthetic model); absent: the solution is its answers.toml only and is not run.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// `gpt2 serve` arguments of a server the solution measures: `course-dev check` starts it
    /// on a free port (`--port 0`) and writes its address where `args` say `{base_url}`.
    #[serde(default)]
    pub server: Option<Vec<String>>,
    /// Lines typed, one per prompt, when `course run N` asks for the prediction in a terminal
    /// (the untouched exercise, run with `args`); empty: not checked.
    #[serde(default)]
    pub prediction: Vec<String>,
    /// Texts that this `course run N` must print after the run (the prediction beside the
    /// measurement).
    #[serde(default)]
    pub prediction_says: Vec<String>,
}

impl ExerciseInfo {
    /// `exercise-N`, the folder name a submission is recognised by.
    pub fn folder_name(&self) -> String {
        format!("exercise-{}", self.number)
    }

    /// Path of a results role relative to the exercises folder (e.g. `exercise-3/results/report.json`),
    /// or `None` when the role is not declared or leaves the exercises folder.
    pub fn result_path(&self, role: &str) -> Option<String> {
        let rel = self.results.get(role)?;
        normalize_relative(&format!("{}/{}", self.folder_name(), rel))
    }

    /// `exercise-N/answers.toml`, relative to the exercises folder.
    pub fn answers_path(&self) -> String {
        format!("{}/answers.toml", self.folder_name())
    }
}

/// The whole manifest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: u32,
    pub exercises: Vec<ExerciseInfo>,
}

/// A manifest that cannot be used; the message names the file, line and fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ManifestError(pub String);

impl Manifest {
    pub fn parse(text: &str, display_path: &str) -> Result<Manifest, ManifestError> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| {
            let at = match e.span() {
                Some(span) => {
                    let (line, column) = line_column(text, span.start);
                    format!("{display_path}:{line}:{column}")
                }
                None => display_path.to_string(),
            };
            ManifestError(format!(
                "{at}: {}; fix the exercise manifest",
                e.message().trim()
            ))
        })?;
        manifest.validate(display_path)?;
        Ok(manifest)
    }

    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ManifestError(format!(
                "{}: cannot read the exercise manifest: {e}",
                path.display()
            ))
        })?;
        Manifest::parse(&text, &path.display().to_string())
    }

    fn validate(&self, display_path: &str) -> Result<(), ManifestError> {
        if self.format != 1 {
            return Err(ManifestError(format!(
                "{display_path}: format {} is not known to this grader (it reads format 1); update the `course` binary",
                self.format
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (index, exercise) in self.exercises.iter().enumerate() {
            if exercise.number != index as u32 + 1 {
                return Err(ManifestError(format!(
                    "{display_path}: exercise entries must be numbered 1, 2, 3... in order; entry {} has number {}",
                    index + 1,
                    exercise.number
                )));
            }
            if !seen.insert(exercise.name.clone()) {
                return Err(ManifestError(format!(
                    "{display_path}: two exercises are named `{}`",
                    exercise.name
                )));
            }
            for (role, path) in &exercise.results {
                if exercise.result_path(role).is_none() {
                    return Err(ManifestError(format!(
                        "{display_path}: exercise {} results.{role} = {path:?} leaves the exercises folder",
                        exercise.number
                    )));
                }
            }
            exercise
                .dev_check
                .validate(exercise.number)
                .map_err(|problem| ManifestError(format!("{display_path}: {problem}")))?;
            if exercise.check == CheckKind::Quiz
                && (exercise.quizzes.len() != 1
                    || (exercise.questions.is_empty() && exercise.draw == 0))
            {
                return Err(ManifestError(format!(
                    "{display_path}: exercise {} is a quiz check: it needs exactly one file in `quizzes`, and a non-empty `questions` list or `draw` above 0",
                    exercise.number
                )));
            }
        }
        Ok(())
    }

    pub fn exercise(&self, number: u32) -> Option<&ExerciseInfo> {
        self.exercises.iter().find(|e| e.number == number)
    }
}

impl DevCheck {
    /// The fields that only make sense together, explained for exercise `number`.
    fn validate(&self, number: u32) -> Result<(), String> {
        let at = format!("exercise {number}'s [exercises.dev_check]");
        let placeholder = self
            .args
            .iter()
            .flatten()
            .any(|a| a.contains(BASE_URL_PLACEHOLDER));
        match (&self.server, placeholder) {
            (Some(_), false) => Err(format!(
                "{at} starts a `server` but its `args` never say {BASE_URL_PLACEHOLDER}: pass the address to the solution, \
                 e.g. args = [\"--base-url\", \"{BASE_URL_PLACEHOLDER}\"]"
            )),
            (None, true) => Err(format!(
                "{at}: `args` say {BASE_URL_PLACEHOLDER} but no `server` is started: add server = [\"--model\", \"synthetic\"] \
                 (gpt2 serve's arguments)"
            )),
            _ if !self.prediction.is_empty() && self.args.is_none() => {
                Err(format!("{at} types a `prediction` at `course run {number}`, which needs the run's `args` (e.g. args = [\"--model\", \"synthetic\"])"))
            }
            _ if !self.prediction_says.is_empty() && self.prediction.is_empty() => {
                Err(format!("{at} has `prediction_says` but no `prediction` to type: add the lines typed at the prompts"))
            }
            _ => Ok(()),
        }
    }
}

/// Resolve `.` and `..` in a `/`-separated relative path; `None` if it is absolute or climbs
/// above its start.
pub fn normalize_relative(path: &str) -> Option<String> {
    if path.starts_with('/') || path.starts_with('\\') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p if p.contains(':') => return None,
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_keeps_paths_inside() {
        assert_eq!(
            normalize_relative("exercise-4/../exercise-3/results/report.json").as_deref(),
            Some("exercise-3/results/report.json")
        );
        assert_eq!(normalize_relative("a/./b//c").as_deref(), Some("a/b/c"));
        assert_eq!(normalize_relative("../x"), None);
        assert_eq!(normalize_relative("/etc/passwd"), None);
        assert_eq!(normalize_relative("C:/x"), None);
    }

    #[test]
    fn the_course_manifest_parses_and_is_complete() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(MANIFEST_PATH);
        let manifest = Manifest::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(manifest.exercises.len(), 8);
        for exercise in &manifest.exercises {
            assert_eq!(
                exercise.dir,
                format!("exercises/exercise-{}", exercise.number)
            );
            assert_eq!(exercise.package, format!("exercise-{}", exercise.number));
            assert!(
                !exercise.hints.is_empty(),
                "exercise {} has no hints",
                exercise.number
            );
            // The template is what learners start from: it must be valid TOML.
            toml::from_str::<toml::Table>(&exercise.answers_template)
                .unwrap_or_else(|e| panic!("exercise {} template: {e}", exercise.number));
            // `course-dev check` proves each untouched exercise fails saying what to do, and runs
            // every solution that writes results.
            let dev = &exercise.dev_check;
            assert!(
                !dev.untouched_says.is_empty(),
                "exercise {} has no dev_check.untouched_says",
                exercise.number
            );
            assert!(
                exercise.results.is_empty() || dev.args.is_some(),
                "exercise {} writes results but has no dev_check.args",
                exercise.number
            );
        }
    }

    /// One exercise entry, with `extra` lines after it (a `[exercises.dev_check]` table).
    fn one_exercise(extra: &str) -> String {
        format!(
            "format = 1\n[[exercises]]\nnumber = 1\nname = \"n\"\ntitle = \"t\"\ndir = \"exercises/exercise-1\"\npackage = \"exercise-1\"\n\
             solution_dir = \"solutions/exercise-1\"\nchapter = \"c.md\"\ntest = false\ncheck = \"traffic\"\nhints = [\"h\"]\n\
             answers_template = \"\"\n{extra}"
        )
    }

    #[test]
    fn dev_check_fields_parse_and_default_to_nothing() {
        let plain = Manifest::parse(&one_exercise(""), "info.toml").unwrap();
        assert_eq!(plain.exercises[0].dev_check, DevCheck::default());
        assert_eq!(
            plain.exercises[0].dev_check.args, None,
            "no args: the solution is not run"
        );

        let text = one_exercise(
            "[exercises.dev_check]\nuntouched_says = [\"results file is missing\", \"course run 1\"]\n\
             no_terminal_says = [\"not a TTY\"]\nargs = [\"--base-url\", \"{base_url}\", \"--requests\", \"4\"]\n\
             server = [\"--model\", \"synthetic\"]\nprediction = [\"matmul\", \"60\"]\nprediction_says = [\"You predicted\"]\n",
        );
        let dev = Manifest::parse(&text, "info.toml")
            .unwrap_or_else(|e| panic!("{e}"))
            .exercises
            .remove(0)
            .dev_check;
        assert_eq!(
            dev.untouched_says,
            ["results file is missing", "course run 1"]
        );
        assert_eq!(dev.no_terminal_says, ["not a TTY"]);
        assert_eq!(
            dev.args.as_deref(),
            Some(
                &[
                    "--base-url".to_string(),
                    BASE_URL_PLACEHOLDER.to_string(),
                    "--requests".into(),
                    "4".into()
                ][..]
            )
        );
        assert_eq!(
            dev.server.as_deref(),
            Some(&["--model".to_string(), "synthetic".to_string()][..])
        );
        assert_eq!((dev.prediction.len(), dev.prediction_says.len()), (2, 1));

        // An empty list of args is a run with `--exercise-dir` alone.
        let dev = Manifest::parse(
            &one_exercise("[exercises.dev_check]\nargs = []\n"),
            "info.toml",
        )
        .unwrap()
        .exercises
        .remove(0)
        .dev_check;
        assert_eq!(dev.args, Some(Vec::new()));
    }

    #[test]
    fn dev_check_fields_that_do_not_fit_together_are_refused_with_the_fix() {
        let refused = |extra: &str| {
            Manifest::parse(&one_exercise(extra), "info.toml")
                .unwrap_err()
                .0
        };
        let err = refused("[exercises.dev_check]\nserver = [\"--model\", \"synthetic\"]\nargs = [\"--requests\", \"4\"]\n");
        assert!(
            err.starts_with("info.toml: exercise 1's [exercises.dev_check]")
                && err.contains("{base_url}"),
            "{err}"
        );
        let err = refused("[exercises.dev_check]\nargs = [\"--base-url\", \"{base_url}\"]\n");
        assert!(err.contains("no `server` is started"), "{err}");
        let err = refused("[exercises.dev_check]\nprediction = [\"matmul\"]\n");
        assert!(err.contains("needs the run's `args`"), "{err}");
        let err =
            refused("[exercises.dev_check]\nargs = []\nprediction_says = [\"You predicted\"]\n");
        assert!(err.contains("no `prediction` to type"), "{err}");
        // A misspelt field is named, with its line.
        let err = refused("[exercises.dev_check]\nuntouched_say = [\"x\"]\n");
        assert!(
            err.starts_with("info.toml:15:") && err.contains("untouched_say"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_manifest_names_the_line() {
        let err = Manifest::parse("format = 1\n[[exercises]]\nnumber = \"one\"\n", "info.toml")
            .unwrap_err();
        assert!(err.0.starts_with("info.toml:3:"), "{}", err.0);
    }
}
