//! A rubric of required ideas for a written answer: each idea is a list of phrases (synonyms),
//! matched as whole words, case-insensitively; a trailing `*` matches any word ending.
//!
//! Keyword rubrics cannot understand prose, so the grader says when it is unsure: a partial
//! match, a match made of bare keywords, or a real sentence that matched nothing is marked
//! *needs instructor review*.
//!
//! A keyword next to a negation says the opposite of the idea ("do not fuse it", "memory
//! traffic is not the problem", "instead of fusing"): such a match does not count, and the
//! answer is flagged. This is the one place negations are read, for every rubric of the course.

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
    /// Ideas whose phrase occurred next to a negation, with the words that negated it
    /// (`"fus* (after \"do not\")"`): not counted as found, and a reason to flag the answer.
    pub negated: Vec<String>,
}

/// Below this many words a full match may be a list of keywords rather than an answer.
const MIN_WORDS_FOR_CONFIDENCE: usize = 5;
/// From this many words an answer that matched nothing may be right in other words.
const WORDS_WORTH_READING: usize = 6;

/// Split into lowercase words; `%` is a word of its own so "15%" can be matched.
pub fn words(text: &str) -> Vec<String> {
    tokens(text).into_iter().map(|t| t.word).collect()
}

/// A word and the clause it is in (clauses end at `. , ; : ! ? ( )`, but not at the point or
/// comma of a number such as 7.7): a negation reaches only the words of its own clause.
#[derive(Debug, Clone, PartialEq)]
struct Token {
    word: String,
    clause: usize,
}

fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    let mut clause = 0;
    for (i, &c) in chars.iter().enumerate() {
        if c.is_alphanumeric() {
            current.extend(c.to_lowercase());
            continue;
        }
        if !current.is_empty() {
            out.push(Token { word: std::mem::take(&mut current), clause });
        }
        if c == '%' {
            out.push(Token { word: "%".to_string(), clause });
        }
        let in_number = matches!(c, '.' | ',')
            && i > 0
            && chars[i - 1].is_ascii_digit()
            && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        if matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | '(' | ')' | '—') && !in_number {
            clause += 1;
        }
    }
    if !current.is_empty() {
        out.push(Token { word: current, clause });
    }
    out
}

/// Where `phrase` occurs in `answer` (both as words): the index of each match's first word.
fn phrase_matches(answer: &[String], phrase: &str) -> Vec<(usize, usize)> {
    let prefix = phrase.trim_end().ends_with('*');
    let wanted = words(phrase);
    if wanted.is_empty() || wanted.len() > answer.len() {
        return Vec::new();
    }
    let last = wanted.len() - 1;
    answer
        .windows(wanted.len())
        .enumerate()
        .filter(|(_, window)| {
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
        .map(|(start, _)| (start, start + wanted.len()))
        .collect()
}

/// Does `phrase` occur in `answer` (both as words)?
#[cfg(test)]
fn phrase_occurs(answer: &[String], phrase: &str) -> bool {
    !phrase_matches(answer, phrase).is_empty()
}

/// How far (in words, within a clause) a negation reaches.
const NEGATION_REACH: usize = 3;

/// Negations that turn the words after them around.
const NEGATES_WHAT_FOLLOWS: [&[&str]; 8] =
    [&["do", "not"], &["no", "need"], &["instead", "of"], &["rather", "than"], &["not"], &["never"], &["cannot"], &["without"]];

/// A contraction (`don't`, `isn't`, `won't`: split into `don` + `t`) or its apostrophe-less
/// spelling; the negation at `i`, if one ends there, and how many words it spans.
fn contraction_at(tokens: &[Token], i: usize) -> Option<String> {
    let word = tokens[i].word.as_str();
    if word == "t" && i > 0 && tokens[i - 1].clause == tokens[i].clause && tokens[i - 1].word.ends_with('n') {
        return Some(format!("{}'t", tokens[i - 1].word));
    }
    const UNAPOSTROPHED: [&str; 10] = ["dont", "doesnt", "isnt", "wont", "cant", "shouldnt", "wouldnt", "arent", "didnt", "wasnt"];
    UNAPOSTROPHED.contains(&word).then(|| word.to_string())
}

/// The negation, if any, that ends at token `i`.
fn negation_ending_at(tokens: &[Token], i: usize, after_the_phrase: bool) -> Option<String> {
    if let Some(c) = contraction_at(tokens, i) {
        return Some(c);
    }
    for cue in NEGATES_WHAT_FOLLOWS {
        // After a phrase only a plain negation turns it around ("fusing is not ..."); "fuse
        // rather than rewrite" keeps the phrase before it.
        if after_the_phrase && !matches!(cue, ["not"] | ["never"] | ["cannot"]) {
            continue;
        }
        let n = cue.len();
        if i + 1 >= n {
            let start = i + 1 - n;
            let same_clause = tokens[start..=i].iter().all(|t| t.clause == tokens[i].clause);
            if same_clause && tokens[start..=i].iter().zip(cue.iter()).all(|(t, w)| t.word == *w) {
                return Some(cue.join(" "));
            }
        }
    }
    None
}

/// The negation next to the words `start..end`, in the same clause: up to
/// [`NEGATION_REACH`] words before, or a plain "not" up to that many words after.
fn negation_near(tokens: &[Token], start: usize, end: usize) -> Option<String> {
    let clause = tokens[start].clause;
    let before = (start.saturating_sub(NEGATION_REACH)..start).rev().filter(|&i| tokens[i].clause == clause);
    for i in before {
        if let Some(cue) = negation_ending_at(tokens, i, false) {
            return Some(format!("after \"{cue}\""));
        }
    }
    let after = (end..(end + NEGATION_REACH).min(tokens.len())).filter(|&i| tokens[i].clause == clause);
    for i in after {
        if let Some(cue) = negation_ending_at(tokens, i, true) {
            return Some(format!("before \"{cue}\""));
        }
    }
    None
}

impl Rubric {
    /// Grade `answer`; `expand` replaces placeholders such as `{top_ops}` by phrases.
    pub fn grade(&self, answer: &str, expand: &dyn Fn(&str) -> Option<Vec<String>>) -> RubricResult {
        let answer_tokens = tokens(answer);
        let answer_words: Vec<String> = answer_tokens.iter().map(|t| t.word.clone()).collect();
        let mut found = Vec::new();
        let mut missing = Vec::new();
        let mut negated = Vec::new();
        for idea in &self.ideas {
            let phrases: Vec<String> = idea
                .any
                .iter()
                .flat_map(|phrase| expand(phrase).unwrap_or_else(|| vec![phrase.clone()]))
                .collect();
            let mut hit = false;
            let mut against = None;
            for phrase in &phrases {
                for (start, end) in phrase_matches(&answer_words, phrase) {
                    match negation_near(&answer_tokens, start, end) {
                        Some(cue) => against = against.or(Some(format!("\"{}\" {cue}", answer_words[start..end].join(" ")))),
                        None => hit = true,
                    }
                }
            }
            // One negated mention is enough to doubt the idea: the sentence argues both ways.
            if let Some(against) = against {
                negated.push(against);
                missing.push(idea.idea.clone());
            } else if hit {
                found.push(idea.idea.clone());
            } else {
                missing.push(idea.idea.clone());
            }
        }
        let fraction = if self.ideas.is_empty() { 0.0 } else { found.len() as f64 / self.ideas.len() as f64 };
        let needs_review = (fraction > 0.0 && fraction < 1.0)
            || (fraction >= 1.0 && answer_words.len() < MIN_WORDS_FOR_CONFIDENCE)
            || (fraction == 0.0 && answer_words.len() >= WORDS_WORTH_READING)
            || !negated.is_empty();
        RubricResult { found, missing, fraction, needs_review, negated }
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
    fn a_negated_idea_is_not_found_and_flags_the_answer() {
        // Every keyword is there, but the sentence argues against fusing.
        let r = rubric().grade("It does little math, but do not fuse it: the matmuls are already fast.", &none);
        assert_eq!(r.missing, ["removable"]);
        assert!(r.needs_review);
        assert_eq!(r.negated, ["\"fuse\" after \"do not\""]);
        for against in [
            "Little math here, and we don't need to remove anything since the matmuls are already fine.",
            "Little math, so rewrite it instead of fusing it, as the matmuls are already fast.",
            "Fusing is not worth it for this little math; the matmuls are already fast.",
            "Little math, the matmuls already fast, no need to fuse it at all.",
            "There is little math, the matmuls are already fast, never remove it.",
        ] {
            let r = rubric().grade(against, &none);
            assert!(r.needs_review && r.negated.len() == 1 && r.missing == ["removable"], "{against}: {r:?}");
        }
    }

    #[test]
    fn a_negation_reaches_only_nearby_words_of_its_clause() {
        // "not" negates "cheap", in its own clause; the fusing idea stands.
        let r = rubric().grade("The activation does little math, not much at all, so fusing removes it; the matmuls are already fast.", &none);
        assert!(r.negated.is_empty(), "{r:?}");
        assert_eq!(r.fraction, 1.0);
        // A figure's decimal point does not end a clause, and "rather than" after a phrase keeps it.
        let r = rubric().grade("Fuse rather than rewrite: 7.5% of little math, and the matmuls already run well.", &none);
        assert!(r.negated.is_empty(), "{r:?}");
    }

    #[test]
    fn placeholders_expand() {
        let expand = |p: &str| (p == "{ops}").then(|| vec!["gelu".to_string()]);
        let r = rubric().grade("gelu", &expand);
        assert_eq!(r.found, ["matmuls efficient"]);
    }
}
