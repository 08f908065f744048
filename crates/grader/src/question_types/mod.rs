//! The question types, independent of any exercise: multiple choice, short answer (exact
//! match plus a rubric of required ideas), and numbers with a tolerance. The per-exercise
//! routines that use them live in `exercise_checks`.

pub mod choice;
pub mod number;
pub mod rubric;
pub mod short_answer;

/// Normalise text for comparison the way mdbook-quiz does (trimmed, case-insensitive), and
/// also ignore Markdown emphasis, backticks and runs of whitespace, which learners cannot see
/// when the option is rendered.
pub fn normalize(text: &str) -> String {
    let stripped: String = text
        .chars()
        .filter(|c| !matches!(c, '`' | '*' | '_'))
        .collect();
    stripped
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}
