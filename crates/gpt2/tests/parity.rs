//! The model against Hugging Face transformers' logits, and against itself: cached decoding,
//! sequences of different lengths in one pass and prompts split into chunks must give the same
//! numbers as one plain forward pass. Each test runs on
//! every kernel path this CPU supports.

mod common;

use candle_core::IndexOp;
use common::{max_abs_diff, on_each_path, reference, tiny_model};
use gpt2::CausalLm;
use gpt2::{Logits, Segment};

const TOL: f32 = 1e-4;

#[test]
fn full_sequence_logits_match_transformers() {
    on_each_path(|path| {
        let model = tiny_model(path);
        let r = reference();
        let logits = model
            .forward_one(
                &r.ids,
                &mut model.new_cache(r.ids.len()),
                Logits::AllPositions,
            )
            .unwrap();
        let rows: Vec<Vec<f32>> = logits.to_vec2().unwrap();
        assert_eq!(rows.len(), r.logits.len());
        for (t, (ours, theirs)) in rows.iter().zip(&r.logits).enumerate() {
            let d = max_abs_diff(ours, theirs);
            assert!(d <= TOL, "{path}, position {t}: max |diff| = {d}");
        }
    });
}

#[test]
fn last_position_logits_are_the_last_row() {
    on_each_path(|path| {
        let model = tiny_model(path);
        let r = reference();
        let last = model
            .forward_one(&r.ids, &mut model.new_cache(16), Logits::LastPosition)
            .unwrap();
        assert_eq!(last.dims(), &[1, 512]);
        let d = max_abs_diff(
            &last.i(0).unwrap().to_vec1().unwrap(),
            r.logits.last().unwrap(),
        );
        assert!(d <= TOL, "{path}: max |diff| = {d}");
    });
}

#[test]
fn kv_cache_decoding_matches_the_full_forward() {
    on_each_path(|path| {
        let model = tiny_model(path);
        let r = reference();
        // A 4-token prefill, then one token at a time.
        let mut cache = model.new_cache(r.ids.len());
        let pre = model
            .forward_one(&r.ids[..4], &mut cache, Logits::AllPositions)
            .unwrap();
        for t in 0..4 {
            let d = max_abs_diff(&pre.i(t).unwrap().to_vec1().unwrap(), &r.logits[t]);
            assert!(d <= TOL, "{path}, prefill position {t}: {d}");
        }
        for t in 4..r.ids.len() {
            let step = model
                .forward_one(&[r.ids[t]], &mut cache, Logits::LastPosition)
                .unwrap();
            let d = max_abs_diff(&step.i(0).unwrap().to_vec1().unwrap(), &r.logits[t]);
            assert!(d <= TOL, "{path}, decode position {t}: {d}");
        }
        assert_eq!(cache.len(), r.ids.len());
    });
}

#[test]
fn sequences_of_different_lengths_in_one_pass_get_their_solo_logits() {
    on_each_path(|path| {
        let model = tiny_model(path);
        let r = reference();
        let long = r.ids.clone();
        let short: Vec<u32> = r.ids[3..8].to_vec();
        // The short prompt alone, for comparison: its last logits, then one decode step.
        let mut own = model.new_cache(short.len() + 1);
        let own_last = model
            .forward(&mut [Segment {
                ids: &short,
                cache: &mut own,
                logits: Logits::LastPosition,
            }])
            .unwrap();
        let own_next = model
            .forward(&mut [Segment {
                ids: &[9],
                cache: &mut own,
                logits: Logits::LastPosition,
            }])
            .unwrap();

        // The long prompt alone, and its next token.
        let mut long_own = model.new_cache(long.len() + 1);
        model
            .forward(&mut [Segment {
                ids: &long,
                cache: &mut long_own,
                logits: Logits::None,
            }])
            .unwrap();
        let long_next = model
            .forward(&mut [Segment {
                ids: &[9],
                cache: &mut long_own,
                logits: Logits::LastPosition,
            }])
            .unwrap();

        // Three prompts in one pass (the short one twice): no padding, each attends to its own cache.
        let cache = |n: usize| model.new_cache(n + 1);
        let (mut a, mut b, mut b2) = (cache(long.len()), cache(short.len()), cache(short.len()));
        let all = model
            .forward(&mut [
                Segment {
                    ids: &long,
                    cache: &mut a,
                    logits: Logits::LastPosition,
                },
                Segment {
                    ids: &short,
                    cache: &mut b,
                    logits: Logits::LastPosition,
                },
                Segment {
                    ids: &short,
                    cache: &mut b2,
                    logits: Logits::LastPosition,
                },
            ])
            .unwrap();
        assert_eq!(all.dims(), &[3, model.config().vocab_size]);
        let d = max_abs_diff(
            &all.i(0).unwrap().to_vec1().unwrap(),
            &r.logits[long.len() - 1],
        );
        assert!(d <= TOL, "{path}, long prompt's last position: {d}");
        for row in [1, 2] {
            let d = max_abs_diff(
                &all.i(row).unwrap().to_vec1().unwrap(),
                &own_last.i(0).unwrap().to_vec1().unwrap(),
            );
            assert!(
                d <= TOL,
                "{path}, short prompt's last position (row {row}): {d}"
            );
        }

        // Then one decode token for each (the short two alike side by side, then the long one)
        // next to a prompt chunk that wants no logits: a row of logits for each decoding
        // sequence, equal to its own decode step.
        let mut c = model.new_cache(8);
        let mixed = model
            .forward(&mut [
                Segment {
                    ids: &[9],
                    cache: &mut b,
                    logits: Logits::LastPosition,
                },
                Segment {
                    ids: &[9],
                    cache: &mut b2,
                    logits: Logits::LastPosition,
                },
                Segment {
                    ids: &[9],
                    cache: &mut a,
                    logits: Logits::LastPosition,
                },
                Segment {
                    ids: &long[..4],
                    cache: &mut c,
                    logits: Logits::None,
                },
            ])
            .unwrap();
        assert_eq!(mixed.dims(), &[3, model.config().vocab_size]);
        for (row, want, what) in [
            (0, &own_next, "short"),
            (1, &own_next, "short, again"),
            (2, &long_next, "long"),
        ] {
            let d = max_abs_diff(
                &mixed.i(row).unwrap().to_vec1().unwrap(),
                &want.i(0).unwrap().to_vec1().unwrap(),
            );
            assert!(
                d <= TOL,
                "{path}, {what} decode step beside a prompt chunk: {d}"
            );
        }
        assert_eq!(
            (a.len(), b.len(), c.len()),
            (long.len() + 1, short.len() + 1, 4)
        );
        // The chunk's rest, in a pass of its own, ends where the whole prompt does.
        let rest = model
            .forward(&mut [Segment {
                ids: &long[4..],
                cache: &mut c,
                logits: Logits::LastPosition,
            }])
            .unwrap();
        let d = max_abs_diff(
            &rest.i(0).unwrap().to_vec1().unwrap(),
            &r.logits[long.len() - 1],
        );
        assert!(d <= TOL, "{path}, prompt in two chunks: {d}");
    });
}
