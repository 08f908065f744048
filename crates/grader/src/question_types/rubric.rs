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
//!
//! An idea may also list `wrong` phrases: claims that contradict it, or figures the question's
//! own numbers make impossible. A phrase word `>5` (or `<14`) matches any number above 5 (below
//! 14), so `"sav* >5 ms"` catches "saves 8 ms" where no line can save more than 5. A wrong
//! phrase in the answer (not itself negated) leaves its idea unmatched and flags the answer.
//!
//! An idea marked `verdict` is the answer's decision (benchmark or profile, yes or no): the
//! first of its phrases, right (`any`) or `wrong`, that the answer states without a negation
//! is its verdict, so "Benchmark: a profile would only show kernels" decides for the benchmark
//! and "Profile it, then benchmark" for the profile. Without the right verdict the reasons
//! earn nothing: a wrong or missing verdict leaves the whole answer at zero.
//!
//! A phrase ending in ` |` matches only at the end of a clause: `"no |"` is the answer "No." or
//! "No, ...", not the "no" of "no need".
//!
//! A list of the rubric's words is not an answer: when the words matched are nearly all the
//! answer says (under five words, or fewer than two other words), it earns nothing and goes to
//! the instructor.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Idea {
    /// The idea, as the report tells the learner.
    pub idea: String,
    /// Phrases any of which shows the idea.
    pub any: Vec<String>,
    /// Phrases that contradict the idea (a wrong claim, an impossible figure): any of them in
    /// the answer, not negated, and the idea is not credited.
    #[serde(default)]
    pub wrong: Vec<String>,
    /// The answer's decision: the first of `any` and `wrong` stated decides, and without the
    /// right one the answer earns nothing.
    #[serde(default)]
    pub verdict: bool,
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
    /// The wrong claims found (`"saves 12 ms"`), each of which cost its idea: a reason to flag.
    pub contradicted: Vec<String>,
    /// A verdict idea the answer decided the wrong way (`"profile" (expected: ...)`) or did not
    /// decide at all: the answer earns nothing.
    pub verdict: Option<String>,
    /// The answer is a list of the rubric's words, not a sentence: it earns nothing.
    pub keyword_list: bool,
}

/// Below this many words a full match may be a list of keywords rather than an answer.
const MIN_WORDS_FOR_CONFIDENCE: usize = 5;
/// From this many words an answer that matched nothing may be right in other words.
const WORDS_WORTH_READING: usize = 6;
/// Fewer words than this outside the phrases matched, and the answer is a list of keywords.
const MIN_OTHER_WORDS: usize = 2;

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
        let in_number = matches!(c, '.' | ',')
            && i > 0
            && chars[i - 1].is_ascii_digit()
            && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        if c.is_alphanumeric() {
            // A unit written against its number ("8ms", "14GB") is a word of its own.
            if c.is_alphabetic()
                && !current.is_empty()
                && current.chars().all(|d| d.is_ascii_digit() || d == '.')
            {
                out.push(Token {
                    word: std::mem::take(&mut current),
                    clause,
                });
            }
            current.extend(c.to_lowercase());
            continue;
        }
        // A decimal point keeps a number whole ("7.5"); a thousands comma is dropped ("1,190").
        if in_number {
            if c == '.' {
                current.push('.');
            }
            continue;
        }
        if !current.is_empty() {
            out.push(Token {
                word: std::mem::take(&mut current),
                clause,
            });
        }
        if c == '%' {
            out.push(Token {
                word: "%".to_string(),
                clause,
            });
        }
        if matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | '(' | ')' | '—') {
            clause += 1;
        }
    }
    if !current.is_empty() {
        out.push(Token {
            word: current,
            clause,
        });
    }
    out
}

/// One word of a phrase.
#[derive(Debug, Clone, PartialEq)]
enum Want {
    /// This word (or, as a phrase's last word, its plural or verb form in -s / -es).
    Word(String),
    /// Any word that starts so (`fus*`).
    Prefix(String),
    /// Any number above (`>5`) or below (`<14`) this one.
    Above(f64),
    Below(f64),
}

fn pattern(phrase: &str) -> Vec<Want> {
    let mut out = Vec::new();
    for piece in phrase.split_whitespace() {
        let bound = |prefix: char| {
            piece
                .strip_prefix(prefix)
                .and_then(|n| n.parse::<f64>().ok())
        };
        if let Some(n) = bound('>') {
            out.push(Want::Above(n));
        } else if let Some(n) = bound('<') {
            out.push(Want::Below(n));
        } else {
            let mut parts: Vec<Want> = words(piece).into_iter().map(Want::Word).collect();
            if piece.ends_with('*') {
                if let Some(Want::Word(last)) = parts.pop() {
                    parts.push(Want::Prefix(last));
                }
            }
            out.extend(parts);
        }
    }
    out
}

/// Where `phrase` occurs in `answer` (both as words): the index of each match's first word.
fn phrase_matches(answer: &[String], phrase: &str) -> Vec<(usize, usize)> {
    let wanted = pattern(phrase);
    if wanted.is_empty() || wanted.len() > answer.len() {
        return Vec::new();
    }
    let last = wanted.len() - 1;
    let number = |word: &str| word.parse::<f64>().ok().filter(|n| n.is_finite());
    answer
        .windows(wanted.len())
        .enumerate()
        .filter(|(_, window)| {
            window
                .iter()
                .zip(&wanted)
                .enumerate()
                .all(|(i, (got, want))| match want {
                    Want::Prefix(start) => got.starts_with(start.as_str()),
                    Want::Above(n) => number(got).is_some_and(|v| v > *n),
                    Want::Below(n) => number(got).is_some_and(|v| v < *n),
                    // A plural or a verb ending on the last word is the same idea.
                    Want::Word(w) if i == last => {
                        got == w
                            || got.strip_suffix('s') == Some(w)
                            || got.strip_suffix("es") == Some(w)
                    }
                    Want::Word(w) => got == w,
                })
        })
        .map(|(start, _)| (start, start + wanted.len()))
        .collect()
}

/// Where `phrase` occurs among the answer's tokens: as [`phrase_matches`], and a phrase ending
/// in ` |` ("no |") only where its last word ends a clause (a bare "No." or "No," but not "no
/// need").
fn matches_in(tokens: &[Token], words: &[String], phrase: &str) -> Vec<(usize, usize)> {
    let (phrase, at_clause_end) = match phrase.trim_end().strip_suffix('|') {
        Some(rest) => (rest, true),
        None => (phrase, false),
    };
    phrase_matches(words, phrase)
        .into_iter()
        .filter(|&(_, end)| {
            !at_clause_end
                || tokens
                    .get(end)
                    .is_none_or(|next| next.clause != tokens[end - 1].clause)
        })
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
const NEGATES_WHAT_FOLLOWS: [&[&str]; 10] = [
    &["do", "not"],
    &["no", "need"],
    &["instead", "of"],
    &["rather", "than"],
    &["not"],
    &["never"],
    &["cannot"],
    &["without"],
    &["no"],
    &["nothing"],
];

/// A contraction (`don't`, `isn't`, `won't`: split into `don` + `t`) or its apostrophe-less
/// spelling; the negation at `i`, if one ends there, and how many words it spans.
fn contraction_at(tokens: &[Token], i: usize) -> Option<String> {
    let word = tokens[i].word.as_str();
    if word == "t"
        && i > 0
        && tokens[i - 1].clause == tokens[i].clause
        && tokens[i - 1].word.ends_with('n')
    {
        return Some(format!("{}'t", tokens[i - 1].word));
    }
    const UNAPOSTROPHED: [&str; 10] = [
        "dont", "doesnt", "isnt", "wont", "cant", "shouldnt", "wouldnt", "arent", "didnt", "wasnt",
    ];
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
            let same_clause = tokens[start..=i]
                .iter()
                .all(|t| t.clause == tokens[i].clause);
            if same_clause
                && tokens[start..=i]
                    .iter()
                    .zip(cue.iter())
                    .all(|(t, w)| t.word == *w)
            {
                return Some(cue.join(" "));
            }
        }
    }
    None
}

/// The negation next to the words `start..end`, in the same clause: up to `before` words
/// before, or a plain "not" up to [`NEGATION_REACH`] words after. A verdict reaches back to its
/// clause's start: in "you can't answer this with a profile" the clause denies the profile.
fn negation_reaching(tokens: &[Token], start: usize, end: usize, before: usize) -> Option<String> {
    let clause = tokens[start].clause;
    let before = (start.saturating_sub(before)..start)
        .rev()
        .filter(|&i| tokens[i].clause == clause);
    for i in before {
        if let Some(cue) = negation_ending_at(tokens, i, false) {
            return Some(format!("after \"{cue}\""));
        }
    }
    let after =
        (end..(end + NEGATION_REACH).min(tokens.len())).filter(|&i| tokens[i].clause == clause);
    for i in after {
        if let Some(cue) = negation_ending_at(tokens, i, true) {
            return Some(format!("before \"{cue}\""));
        }
    }
    None
}

/// Where a phrase of an idea occurs, not negated: its words `start..end`.
struct Hit {
    start: usize,
    end: usize,
    right: bool,
}

impl Rubric {
    /// Grade `answer`; `expand` replaces placeholders such as `{top_ops}` by phrases.
    pub fn grade(
        &self,
        answer: &str,
        expand: &dyn Fn(&str) -> Option<Vec<String>>,
    ) -> RubricResult {
        let answer_tokens = tokens(answer);
        let answer_words: Vec<String> = answer_tokens.iter().map(|t| t.word.clone()).collect();
        let shown = |start: usize, end: usize| answer_words[start..end].join(" ");
        let mut found = Vec::new();
        let mut missing = Vec::new();
        let mut negated = Vec::new();
        let mut contradicted = Vec::new();
        let mut verdict = None;
        let mut decided_wrong = false;
        // The answer's words inside a phrase credited: the rest tells a sentence from a list.
        let mut covered = vec![false; answer_words.len()];
        for idea in &self.ideas {
            let phrases: Vec<String> = idea
                .any
                .iter()
                .flat_map(|phrase| expand(phrase).unwrap_or_else(|| vec![phrase.clone()]))
                .collect();
            let mut hits = Vec::new();
            let mut against = None;
            // A verdict is denied by a negation anywhere before it in its clause.
            let reach = if idea.verdict {
                usize::MAX
            } else {
                NEGATION_REACH
            };
            for phrase in &phrases {
                for (start, end) in matches_in(&answer_tokens, &answer_words, phrase) {
                    match negation_reaching(&answer_tokens, start, end, reach) {
                        Some(cue) => {
                            against = against.or(Some(format!("\"{}\" {cue}", shown(start, end))))
                        }
                        None => hits.push(Hit {
                            start,
                            end,
                            right: true,
                        }),
                    }
                }
            }
            // A wrong claim costs the idea, unless the answer denies it ("not compute-bound").
            let wrong_hits: Vec<Hit> = idea
                .wrong
                .iter()
                .flat_map(|phrase| matches_in(&answer_tokens, &answer_words, phrase))
                .filter(|&(start, end)| {
                    negation_reaching(&answer_tokens, start, end, reach).is_none()
                })
                .map(|(start, end)| Hit {
                    start,
                    end,
                    right: false,
                })
                .collect();
            if idea.verdict {
                // The first stated decides; where a right and a wrong phrase start together
                // ("profile vLLM" against "profile"), the longer, more specific one.
                let first = hits
                    .iter()
                    .chain(&wrong_hits)
                    .min_by_key(|h| (h.start, std::cmp::Reverse(h.end), h.right));
                match first {
                    Some(h) if h.right => {
                        covered[h.start..h.end].iter_mut().for_each(|c| *c = true);
                        found.push(idea.idea.clone());
                    }
                    Some(h) => {
                        verdict = Some(format!(
                            "the answer decides \"{}\" where the right decision is: {}",
                            shown(h.start, h.end),
                            idea.idea
                        ));
                        decided_wrong = true;
                        missing.push(idea.idea.clone());
                    }
                    None => {
                        verdict = Some(format!(
                            "no decision found, where the right one is: {}",
                            idea.idea
                        ));
                        negated.extend(against);
                        missing.push(idea.idea.clone());
                    }
                }
                continue;
            }
            if !wrong_hits.is_empty() {
                let claims: Vec<String> = wrong_hits
                    .iter()
                    .map(|h| format!("\"{}\"", shown(h.start, h.end)))
                    .collect();
                contradicted.push(format!("{} (against: {})", claims.join(", "), idea.idea));
                missing.push(idea.idea.clone());
            // One negated mention is enough to doubt the idea: the sentence argues both ways.
            } else if let Some(against) = against {
                negated.push(against);
                missing.push(idea.idea.clone());
            } else if !hits.is_empty() {
                for h in &hits {
                    covered[h.start..h.end].iter_mut().for_each(|c| *c = true);
                }
                found.push(idea.idea.clone());
            } else {
                missing.push(idea.idea.clone());
            }
        }
        let mut fraction = if self.ideas.is_empty() || verdict.is_some() {
            0.0
        } else {
            found.len() as f64 / self.ideas.len() as f64
        };
        let other_words = covered.iter().filter(|c| !**c).count();
        let keyword_list = fraction > 0.0
            && (answer_words.len() < MIN_WORDS_FOR_CONFIDENCE || other_words < MIN_OTHER_WORDS);
        if keyword_list {
            fraction = 0.0;
        }
        // A sentence that matched nothing may be right in other words; a decided wrong verdict
        // is not unsure.
        let matched_nothing = found.is_empty() && negated.is_empty() && contradicted.is_empty();
        let wrong_verdict = decided_wrong;
        let needs_review = (fraction > 0.0 && fraction < 1.0)
            || keyword_list
            || (matched_nothing && !wrong_verdict && answer_words.len() >= WORDS_WORTH_READING)
            || (verdict.is_some() && !wrong_verdict && answer_words.len() >= WORDS_WORTH_READING)
            || !negated.is_empty()
            || !contradicted.is_empty();
        RubricResult {
            found,
            missing,
            fraction,
            needs_review,
            negated,
            contradicted,
            verdict,
            keyword_list,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rubric() -> Rubric {
        Rubric {
            points: 3.0,
            ideas: vec![
                Idea {
                    idea: "little math".into(),
                    any: vec!["little math".into(), "memory*".into()],
                    wrong: vec![],
                    verdict: false,
                },
                Idea {
                    idea: "removable".into(),
                    any: vec!["fus*".into(), "remov*".into()],
                    wrong: vec!["sav* >5 ms".into()],
                    verdict: false,
                },
                Idea {
                    idea: "matmuls efficient".into(),
                    any: vec!["already".into(), "{ops}".into()],
                    wrong: vec!["compute bound".into()],
                    verdict: false,
                },
            ],
        }
    }

    fn none(_: &str) -> Option<Vec<String>> {
        None
    }

    /// A routing question: the verdict (benchmark, not profile) and one reason.
    fn routing() -> Rubric {
        Rubric {
            points: 2.0,
            ideas: vec![
                Idea {
                    idea: "benchmark".into(),
                    any: vec!["benchmark*".into()],
                    wrong: vec!["profil*".into()],
                    verdict: true,
                },
                Idea {
                    idea: "a whole-system figure under load".into(),
                    any: vec!["whole system".into(), "under load".into()],
                    wrong: vec![],
                    verdict: false,
                },
            ],
        }
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
        let unmatched = rubric().grade(
            "Because the other line is where the gain hides today.",
            &none,
        );
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
        let r = rubric().grade(
            "It does little math, but do not fuse it: the matmuls are already fast.",
            &none,
        );
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
        let r = rubric().grade(
            "Fuse rather than rewrite: 7.5% of little math, and the matmuls already run well.",
            &none,
        );
        assert!(r.negated.is_empty(), "{r:?}");
    }

    #[test]
    fn placeholders_expand() {
        let expand = |p: &str| (p == "{ops}").then(|| vec!["gelu".to_string()]);
        let r = rubric().grade("gelu", &expand);
        assert_eq!(r.found, ["matmuls efficient"]);
    }

    #[test]
    fn a_wrong_claim_or_an_impossible_figure_costs_its_idea() {
        let r = rubric().grade(
            "Little math, so fusing them saves 12 ms; the matmuls are already fast.",
            &none,
        );
        assert_eq!(r.missing, ["removable"], "{r:?}");
        assert!(
            r.needs_review
                && r.contradicted.len() == 1
                && r.contradicted[0].contains("\"saves 12 ms\""),
            "{r:?}"
        );
        // Within what the figures allow, or a unit written against its number: as usual.
        assert_eq!(
            rubric()
                .grade(
                    "Little math, so fusing them saves 3 ms; the matmuls are already fast.",
                    &none
                )
                .fraction,
            1.0
        );
        let r = rubric().grade(
            "Little math, so fusing them saves 7.5ms; the matmuls are already fast.",
            &none,
        );
        assert!(
            r.contradicted.len() == 1 && r.contradicted[0].contains("\"saves 7.5 ms\""),
            "{r:?}"
        );
        // A claim the answer denies is no claim.
        let r = rubric().grade(
            "Little math, so fuse it: the matmuls are already fast, not compute bound.",
            &none,
        );
        assert!(r.contradicted.is_empty() && r.fraction == 1.0, "{r:?}");
        let r = rubric().grade(
            "Little math, so fuse it: the matmuls are already compute bound.",
            &none,
        );
        assert_eq!(r.missing, ["matmuls efficient"], "{r:?}");
    }

    #[test]
    fn numbers_are_words_whole() {
        assert_eq!(
            words("7.5% of 1,190 ms, 8ms, bf16 at 14GB"),
            ["7.5", "%", "of", "1190", "ms", "8", "ms", "bf16", "at", "14", "gb"]
        );
        assert!(
            phrase_occurs(&words("it takes 15 ms"), ">14 ms")
                && !phrase_occurs(&words("it takes 14 ms"), ">14 ms")
        );
        assert!(phrase_occurs(&words("a floor of 4 ms"), "floor of <14 ms"));
    }

    #[test]
    fn the_first_verdict_stated_decides_and_a_wrong_one_zeroes_the_answer() {
        let right = [
            "Benchmark it: the question is about the whole system under load.",
            "Benchmark: a profile would only show kernels, and this is the whole system under load.",
            "Rather than profile it, benchmark the whole system under load.",
        ];
        for answer in right {
            let r = routing().grade(answer, &none);
            assert!(
                r.fraction == 1.0 && !r.needs_review && r.verdict.is_none(),
                "{answer}: {r:?}"
            );
        }
        // The other tool first, or the right one denied: nothing, whatever the reasons say.
        for answer in [
            "Profile it, then benchmark the whole system under load.",
            "Don't benchmark; profile the whole system under load.",
        ] {
            let r = routing().grade(answer, &none);
            assert_eq!(r.fraction, 0.0, "{answer}: {r:?}");
            assert!(
                r.verdict.as_deref().unwrap().contains("\"profile\""),
                "{r:?}"
            );
        }
        // A clause that denies the other tool, however far back its negation.
        let r = routing().grade(
            "You can't answer this with a profile; benchmark the whole system under load.",
            &none,
        );
        assert!(r.fraction == 1.0 && r.verdict.is_none(), "{r:?}");
        // No verdict at all in a sentence: nothing, and the instructor reads it.
        let r = routing().grade(
            "It depends on the whole system under load, so measure it.",
            &none,
        );
        assert!(r.fraction == 0.0 && r.needs_review, "{r:?}");
    }

    #[test]
    fn a_list_of_the_rubrics_words_earns_nothing_and_is_flagged() {
        for list in [
            "benchmark, whole system",
            "benchmark whole system under load latency",
            "Benchmark; whole system; under load",
        ] {
            let r = routing().grade(list, &none);
            assert!(
                r.keyword_list && r.fraction == 0.0 && r.needs_review,
                "{list}: {r:?}"
            );
        }
        let r = routing().grade("Benchmark the whole system under doubled traffic.", &none);
        assert!(!r.keyword_list && r.fraction == 1.0, "{r:?}");
    }

    #[test]
    fn a_bar_ends_a_phrase_at_the_end_of_a_clause() {
        let no = |text: &str| {
            let t = tokens(text);
            let w: Vec<String> = t.iter().map(|t| t.word.clone()).collect();
            !matches_in(&t, &w, "no |").is_empty()
        };
        assert!(no("No. Tune it.") && no("No, tune it") && no("Not yet; no"));
        assert!(!no("No need for tuning") && !no("There is no other way"));
    }

    #[test]
    fn no_and_nothing_negate_what_follows() {
        let r = rubric().grade(
            "Little math, but there is nothing to remove; the matmuls are already fast.",
            &none,
        );
        assert_eq!(r.missing, ["removable"], "{r:?}");
        let r = rubric().grade(
            "Fuse it: little math, and the matmuls show no already tuned kernel.",
            &none,
        );
        assert_eq!(r.missing, ["matmuls efficient"], "{r:?}");
    }
}
