//! A rubric of required ideas for a written answer: each idea is a list of phrases (synonyms),
//! matched as whole words, case-insensitively; a trailing `*` matches any word ending.
//!
//! Keyword rubrics cannot understand prose, so the grader says when it is unsure: a partial
//! match, a match made of bare keywords, or a real sentence that matched nothing is marked
//! *needs instructor review*.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Idea {
    /// The idea, as the report tells the learner.
    pub idea: String,
    /// Phrases any of which shows the idea.
    pub any: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    pub points: f64,
    pub ideas: Vec<Idea>,
}

/// What a rubric made of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RubricResult {
    /// Ideas found, in rubric order.
    pub found: Vec<String>,
    pub missing: Vec<String>,
    pub fraction: f64,
    pub needs_review: bool,
}

/// Below this many words a full match may be a list of keywords rather than an answer.
const MIN_WORDS_FOR_CONFIDENCE: usize = 5;
/// From this many words an answer that matched nothing may be right in other words.
const WORDS_WORTH_READING: usize = 6;

/// Split into lowercase words; `%` is a word of its own so "15%" can be matched.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            current.extend(c.to_lowercase());
        } else {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            if c == '%' {
                out.push("%".to_string());
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Does `phrase` occur in `answer` (both as words)?
fn phrase_occurs(answer: &[String], phrase: &str) -> bool {
    let prefix = phrase.trim_end().ends_with('*');
    let wanted = words(phrase);
    if wanted.is_empty() || wanted.len() > answer.len() {
        return false;
    }
    let last = wanted.len() - 1;
    answer.windows(wanted.len()).any(|window| {
        window.iter().zip(&wanted).enumerate().all(|(i, (got, want))| {
            if i == last && prefix {
                got.starts_with(want.as_str())
            } else if i == last {
                // A plural or a verb ending on the last word is the same idea.
                got == want || got.strip_suffix('s') == Some(want) || got.strip_suffix("es") == Some(want)
            } else {
                got == want
            }
        })
    })
}

impl Rubric {
    /// Grade `answer`; `expand` replaces placeholders such as `{top_ops}` by phrases.
    pub fn grade(&self, answer: &str, expand: &dyn Fn(&str) -> Option<Vec<String>>) -> RubricResult {
        let answer_words = words(answer);
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for idea in &self.ideas {
            let hit = idea.any.iter().any(|phrase| match expand(phrase) {
                Some(phrases) => phrases.iter().any(|p| phrase_occurs(&answer_words, p)),
                None => phrase_occurs(&answer_words, phrase),
            });
            if hit {
                found.push(idea.idea.clone());
            } else {
                missing.push(idea.idea.clone());
            }
        }
        let fraction = if self.ideas.is_empty() { 0.0 } else { found.len() as f64 / self.ideas.len() as f64 };
        let needs_review = (fraction > 0.0 && fraction < 1.0)
            || (fraction >= 1.0 && answer_words.len() < MIN_WORDS_FOR_CONFIDENCE)
            || (fraction == 0.0 && answer_words.len() >= WORDS_WORTH_READING);
        RubricResult { found, missing, fraction, needs_review }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rubric() -> Rubric {
        Rubric {
            points: 3.0,
            ideas: vec![
                Idea { idea: "little math".into(), any: vec!["little math".into(), "memory*".into()] },
                Idea { idea: "removable".into(), any: vec!["fus*".into(), "remov*".into()] },
                Idea { idea: "matmuls efficient".into(), any: vec!["already".into(), "{ops}".into()] },
            ],
        }
    }

    fn none(_: &str) -> Option<Vec<String>> {
        None
    }

    #[test]
    fn all_ideas_in_a_sentence_is_confident() {
        let r = rubric().grade("The activations do little math, so fusing them removes memory traffic; matmuls are already fast.", &none);
        assert_eq!(r.fraction, 1.0);
        assert!(!r.needs_review);
    }

    #[test]
    fn some_ideas_is_partial_and_needs_review() {
        let r = rubric().grade("It is memory-bound, so fuse it.", &none);
        assert!((r.fraction - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.missing, ["matmuls efficient"]);
        assert!(r.needs_review);
    }

    #[test]
    fn bare_keywords_and_unmatched_prose_need_review() {
        assert!(rubric().grade("memory fuse already", &none).needs_review);
        let unmatched = rubric().grade("Because the other line is where the gain hides today.", &none);
        assert_eq!(unmatched.fraction, 0.0);
        assert!(unmatched.needs_review);
        assert!(!rubric().grade("no idea", &none).needs_review);
    }

    #[test]
    fn words_match_whole_with_plural_and_prefix() {
        let w = words("The GELU ops take 15% of the step; fusion helps.");
        assert!(phrase_occurs(&w, "%"));
        assert!(phrase_occurs(&w, "op"));
        assert!(phrase_occurs(&w, "fus*"));
        assert!(!phrase_occurs(&w, "fuse"));
        assert!(!phrase_occurs(&w, "he"));
        assert!(phrase_occurs(&w, "the step"));
    }

    #[test]
    fn placeholders_expand() {
        let expand = |p: &str| (p == "{ops}").then(|| vec!["gelu".to_string()]);
        let r = rubric().grade("gelu", &expand);
        assert_eq!(r.found, ["matmuls efficient"]);
    }
}
