//! The answer key: pass marks, tolerances and rubrics, everything that grades answers beyond
//! the quiz files. The default is `crates/grader/key/key.toml`; `course grade --key DIR` reads
//! `DIR/key.toml` instead, and quiz files in `DIR/quizzes/` replace the grader bank's files of the
//! same name (`crates/grader/bank/`: question variants learners have not seen).

use crate::question_types::rubric::Rubric;
use course_model::manifest::{CheckKind, Manifest};
use course_model::text::line_column;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The default key folder, relative to the course root.
pub const DEFAULT_KEY_DIR: &str = "crates/grader/key";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuizKey {
    pub pass_mark: f64,
    /// Rubrics for short-answer questions, by question id.
    #[serde(default)]
    pub rubrics: BTreeMap<String, Rubric>,
    /// Short answers whose points an instructor awards (in overrides.toml): the rubric's
    /// reading is shown and the answer flagged for review, but no points are given by machine.
    #[serde(default)]
    pub reviewed: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchVerdictKey {
    pub pass_mark: f64,
    /// How far the learner's ratio may be from bench.json's (absolute).
    pub ratio_tolerance: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopOpsKey {
    pub pass_mark: f64,
    /// How far a share may be from the report's, in percentage points.
    pub share_tolerance_pct: f64,
    /// Points of the plan's questions and of the prediction.
    pub plan: PlanPoints,
    /// The thresholds the plan's mechanism is judged by (see `crate::plan_rule`): written in
    /// the first such exercise's section (exercise 3's), and used by every exercise.
    #[serde(default)]
    pub mechanism: Option<MechanismKey>,
    /// Reads `plan.why`: it only flags an answer for review, it never gives or takes points.
    /// `{top_ops}` in a synonym list stands for the names of the learner's own top three ops.
    pub why: Rubric,
    /// The memory prediction (`[memory]`), where the exercise asks one (exercise 8).
    #[serde(default)]
    pub memory: Option<MemoryKey>,
}

/// Points and tolerance of a memory prediction (`crate::exercise_checks::memory`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryKey {
    pub weights: f64,
    pub kv_cache: f64,
    pub peak: f64,
    /// How far the weights and the KV cache may be from the config's arithmetic, in %.
    pub tolerance_pct: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanPoints {
    pub attack: f64,
    pub mechanism: f64,
    pub expected_cut: f64,
    pub prediction: f64,
}

/// When a mechanism agrees with a row's measured roofline (percentages of the row's rooflines;
/// µs per call for launch overhead): the thresholds of the profiler's reading rule
/// (`profiler::reading`, the same five fields), which `crate::plan_rule` judges by. The key's
/// values replace the profiler's defaults; a test keeps the default key's equal to them.
pub type MechanismKey = profiler::reading::Thresholds;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetKey {
    pub pass_mark: f64,
    /// Absolute tolerance for the illustrative answers, in their units. Their expected values
    /// are not in the key: each learner's step is drawn from their id
    /// (`course_model::illustrative_step::IllustrativeStep::for_learner`).
    pub tolerance: f64,
    pub share_tolerance_pct: f64,
    /// Tolerance of `own.saving_pct` against `op_share_pct × removed_fraction`.
    pub arithmetic_tolerance_pct: f64,
    /// The step-time cut the exercise asks for, in %: does any single line reach it?
    pub target_cut_pct: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FuseKey {
    pub pass_mark: f64,
    /// The fused op must match the unfused ops this closely.
    pub max_abs_error_limit: f64,
    /// Relative tolerance of the learner's max_abs_error against fused_check.json.
    pub error_rel_tolerance: f64,
    /// Relative tolerance of the roofline figures the learner copies (GB/s, % of roofline).
    pub roofline_rel_tolerance: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficKey {
    pub pass_mark: f64,
    /// The P90 TTFT target; when absent, the target the learner states is used.
    #[serde(default)]
    pub target_p90_ttft_ms: Option<f64>,
    /// Relative tolerance of the learner's P90 figures against bench.json.
    pub p90_rel_tolerance: f64,
}

/// One exercise's key, typed by the exercise's check routine.
#[derive(Debug, Clone)]
pub enum ExerciseKey {
    Quiz(QuizKey),
    BenchVerdict(BenchVerdictKey),
    TopOps(TopOpsKey),
    Budget(BudgetKey),
    Fuse(FuseKey),
    Traffic(TrafficKey),
}

impl ExerciseKey {
    pub fn pass_mark(&self) -> f64 {
        match self {
            ExerciseKey::Quiz(k) => k.pass_mark,
            ExerciseKey::BenchVerdict(k) => k.pass_mark,
            ExerciseKey::TopOps(k) => k.pass_mark,
            ExerciseKey::Budget(k) => k.pass_mark,
            ExerciseKey::Fuse(k) => k.pass_mark,
            ExerciseKey::Traffic(k) => k.pass_mark,
        }
    }
}

/// A whole key: one section per exercise.
#[derive(Debug, Clone)]
pub struct Key {
    /// The folder it came from; `DIR/quizzes` holds variant quiz files.
    pub dir: PathBuf,
    exercises: BTreeMap<u32, ExerciseKey>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

impl Key {
    /// Read `DIR/key.toml`, with one `[exercise-N]` section for every exercise of the manifest.
    pub fn load(dir: &Path, manifest: &Manifest) -> Result<Key, KeyError> {
        let path = dir.join("key.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            KeyError(format!(
                "{}: cannot read the answer key: {e}; pass --key with a folder holding key.toml",
                path.display()
            ))
        })?;
        let mut key = Key::parse(&text, &path.display().to_string(), manifest)?;
        key.dir = dir.to_path_buf();
        Ok(key)
    }

    pub fn parse(text: &str, display_path: &str, manifest: &Manifest) -> Result<Key, KeyError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            let at = match e.span() {
                Some(span) => {
                    let (line, column) = line_column(text, span.start);
                    format!("{display_path}:{line}:{column}")
                }
                None => display_path.to_string(),
            };
            KeyError(format!(
                "{at}: the answer key is not valid TOML: {}",
                e.message().trim()
            ))
        })?;
        let mut exercises = BTreeMap::new();
        for info in &manifest.exercises {
            let section_name = format!("exercise-{}", info.number);
            let Some(section) = table.get(&section_name) else {
                return Err(KeyError(format!(
                    "{display_path}: the answer key has no [{section_name}] section"
                )));
            };
            let parsed = match info.check {
                CheckKind::Quiz => {
                    ExerciseKey::Quiz(section_as(section, display_path, &section_name)?)
                }
                CheckKind::BenchVerdict => {
                    ExerciseKey::BenchVerdict(section_as(section, display_path, &section_name)?)
                }
                CheckKind::TopOps => {
                    ExerciseKey::TopOps(section_as(section, display_path, &section_name)?)
                }
                CheckKind::Budget => {
                    ExerciseKey::Budget(section_as(section, display_path, &section_name)?)
                }
                CheckKind::Fuse => {
                    ExerciseKey::Fuse(section_as(section, display_path, &section_name)?)
                }
                CheckKind::Traffic => {
                    ExerciseKey::Traffic(section_as(section, display_path, &section_name)?)
                }
            };
            if !(0.0..=1.0).contains(&parsed.pass_mark()) {
                return Err(KeyError(format!(
                    "{display_path}: [{section_name}] pass_mark must be a fraction between 0 and 1"
                )));
            }
            if let ExerciseKey::TopOps(TopOpsKey {
                mechanism: Some(m), ..
            }) = &parsed
            {
                if let Some(problem) = m.problem() {
                    return Err(KeyError(format!(
                        "{display_path}: [{section_name}.mechanism]: {problem}; fix the threshold (crates/profiler/REPORT.md, \
                         section The reading, says what each one means)"
                    )));
                }
            }
            exercises.insert(info.number, parsed);
        }
        Ok(Key {
            dir: PathBuf::new(),
            exercises,
        })
    }

    pub fn exercise(&self, number: u32) -> Option<&ExerciseKey> {
        self.exercises.get(&number)
    }

    /// The mechanism thresholds, written once in the key (exercise 3's `[exercise-3.mechanism]`)
    /// and used by every exercise that judges a mechanism (3, 4 and 5).
    pub fn mechanism(&self) -> Option<&MechanismKey> {
        self.exercises.values().find_map(|k| match k {
            ExerciseKey::TopOps(t) => t.mechanism.as_ref(),
            _ => None,
        })
    }

    /// Quiz folders to search, the key's own first.
    pub fn quiz_dirs(&self, root: &Path) -> Vec<PathBuf> {
        vec![self.dir.join("quizzes"), course_model::quiz::bank_dir(root)]
    }
}

fn section_as<T: DeserializeOwned>(
    section: &toml::Value,
    display_path: &str,
    name: &str,
) -> Result<T, KeyError> {
    section.clone().try_into().map_err(|e: toml::de::Error| {
        KeyError(format!("{display_path}: [{name}]: {}", e.message().trim()))
    })
}

/// The default key, compiled in: for the reference solutions, which apply the course's rule to
/// their own results with the same thresholds `course check` grades them by.
pub const DEFAULT_KEY_TOML: &str = include_str!("../key/key.toml");

/// The default key's mechanism thresholds.
pub fn default_mechanism() -> MechanismKey {
    let table: toml::Table =
        toml::from_str(DEFAULT_KEY_TOML).expect("the compiled-in key.toml is valid TOML (tested)");
    let section = table
        .get("exercise-3")
        .and_then(|t| t.get("mechanism"))
        .cloned()
        .expect("key.toml has [exercise-3.mechanism] (tested)");
    section
        .try_into()
        .expect("[exercise-3.mechanism] has every threshold (tested)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_key_matches_the_manifest() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let manifest = Manifest::load(&root.join(course_model::manifest::MANIFEST_PATH)).unwrap();
        let key =
            Key::load(&root.join(DEFAULT_KEY_DIR), &manifest).unwrap_or_else(|e| panic!("{e}"));
        for exercise in &manifest.exercises {
            assert!(key.exercise(exercise.number).is_some());
        }
        assert_eq!(key.mechanism(), Some(&default_mechanism()));
    }

    #[test]
    fn the_key_s_mechanism_thresholds_are_the_profiler_s_defaults() {
        // The table a learner reads is read with the profiler's defaults; the default key grades
        // with key.toml's. Read key.toml from disk, as `course check` does, and compare.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("key/key.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        let section = table["exercise-3"]["mechanism"].clone();
        let on_disk: MechanismKey = section.try_into().unwrap();
        assert_eq!(
            on_disk,
            profiler::reading::Thresholds::DEFAULT,
            "{}: [exercise-3.mechanism] and profiler::reading::Thresholds::DEFAULT (crates/profiler/src/reading.rs) must hold the \
             same values: change both, and crates/profiler/REPORT.md's table of defaults",
            path.display()
        );
    }

    #[test]
    fn thresholds_that_contradict_themselves_are_refused_with_the_section() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let manifest = Manifest::load(&root.join(course_model::manifest::MANIFEST_PATH)).unwrap();
        let bad =
            DEFAULT_KEY_TOML.replace("not_memory_below_pct = 25.0", "not_memory_below_pct = 75.0");
        let err = Key::parse(&bad, "key.toml", &manifest).unwrap_err().0;
        assert!(err.starts_with("key.toml: [exercise-3.mechanism]: not_memory_below_pct (75) is above memory_above_pct (50)"), "{err}");
    }
}
