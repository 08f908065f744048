//! Per-learner variants: the one place that turns a learner's id into the random choices of
//! their questions (which scenarios they are asked, in what order the options come, which
//! budget numbers they get). `course check` and `course grade` call the same functions with
//! the same id, so both regenerate exactly the variant the learner saw.
//!
//! The id is the one `course` stores in `exercises/learner.toml`; the seed mixes it with the
//! exercise number so that one learner's exercises do not share their draws. ChaCha8 is used
//! because its output for a seed is fixed by its specification (a submission graded a year
//! later gets the same variant); the hash is FNV-1a, written out because std's hasher may
//! change between Rust releases.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The random source of one learner's variant of one exercise.
pub type VariantRng = ChaCha8Rng;

/// The seed of `learner_id`'s variant of exercise `exercise`: stable across runs, machines
/// and Rust releases. Ids are compared as written after trimming, case-insensitively, so
/// "Alice" and "alice " get the same variant.
pub fn learner_seed(learner_id: &str, exercise: u32) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let id = learner_id.trim().to_lowercase();
    let text = format!("{id}\0exercise-{exercise}");
    text.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// The random source for `learner_id`'s variant of exercise `exercise`.
pub fn rng(learner_id: &str, exercise: u32) -> VariantRng {
    ChaCha8Rng::seed_from_u64(learner_seed(learner_id, exercise))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    const FIRST_DRAW: u64 = 42_033_974_740_915_324;

    #[test]
    fn the_same_learner_gets_the_same_draws_and_another_learner_other_ones() {
        let draws = |id: &str| -> Vec<u32> {
            let mut r = rng(id, 4);
            (0..8).map(|_| r.random_range(0..1000)).collect()
        };
        assert_eq!(draws("alice"), draws("alice"));
        assert_eq!(
            draws("Alice "),
            draws("alice"),
            "ids are trimmed and case-folded"
        );
        assert_ne!(draws("alice"), draws("bob"));
        assert_ne!(
            learner_seed("alice", 4),
            learner_seed("alice", 6),
            "exercises draw apart"
        );
    }

    #[test]
    fn the_seed_is_fixed_by_the_algorithm_not_by_this_build() {
        // FNV-1a of "alice\0exercise-4", computed outside Rust (Python, from the published
        // constants): if this changes, every stored submission is graded against another variant.
        assert_eq!(learner_seed("alice", 4), 0x1bb5_edf1_d441_2082);
        // ChaCha8's first output for that seed, as rand_chacha 0.9 gives it.
        assert_eq!(rng("alice", 4).random::<u64>(), FIRST_DRAW);
    }
}
