//! The model against Hugging Face transformers' logits, and against itself: cached decoding
//! and padded batches must give the same numbers as one plain forward pass. Each test runs on
//! every kernel path this CPU supports.

mod common;

use candle_core::IndexOp;
use common::{max_abs_diff, on_each_path, reference, tiny_model};
use gpt2::{Cache, Logits};

const TOL: f32 = 1e-4;

#[test]
fn full_sequence_logits_match_transformers() {
    on_each_path(|path| {
        let model = tiny_model();
        let r = reference();
        let mut cache = model.new_cache(1, r.ids.len());
        let logits = model.forward(&[r.ids.clone()], &mut cache, Logits::AllPositions).unwrap();
        let rows: Vec<Vec<f32>> = logits.i(0).unwrap().to_vec2().unwrap();
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
        let model = tiny_model();
        let r = reference();
        let last = model.forward(&[r.ids.clone()], &mut model.new_cache(1, 16), Logits::LastPosition).unwrap();
        assert_eq!(last.dims(), &[1, 512]);
        let d = max_abs_diff(&last.i(0).unwrap().to_vec1().unwrap(), r.logits.last().unwrap());
        assert!(d <= TOL, "{path}: max |diff| = {d}");
    });
}

#[test]
fn kv_cache_decoding_matches_the_full_forward() {
    on_each_path(|path| {
        let model = tiny_model();
        let r = reference();
        // A 4-token prefill, then one token at a time.
        let mut cache = model.new_cache(1, r.ids.len());
        let pre = model.forward(&[r.ids[..4].to_vec()], &mut cache, Logits::AllPositions).unwrap();
        for t in 0..4 {
            let d = max_abs_diff(&pre.i((0, t)).unwrap().to_vec1().unwrap(), &r.logits[t]);
            assert!(d <= TOL, "{path}, prefill position {t}: {d}");
        }
        for t in 4..r.ids.len() {
            let step = model.forward(&[vec![r.ids[t]]], &mut cache, Logits::LastPosition).unwrap();
            let d = max_abs_diff(&step.i(0).unwrap().to_vec1().unwrap(), &r.logits[t]);
            assert!(d <= TOL, "{path}, decode position {t}: {d}");
        }
        assert_eq!(cache.len(), r.ids.len());
    });
}

#[test]
fn a_padded_batch_gives_each_rows_unpadded_logits() {
    on_each_path(|path| {
        let model = tiny_model();
        let r = reference();
        let long = r.ids.clone();
        let short: Vec<u32> = r.ids[3..8].to_vec();
        let pad = long.len() - short.len();
        let padded_short = [vec![0; pad], short.clone()].concat();
        let mut cache = Cache::new(model.config(), vec![0, pad], long.len() + 1);
        let both = model.forward(&[long.clone(), padded_short], &mut cache, Logits::AllPositions).unwrap();

        let alone = model.forward(&[short.clone()], &mut model.new_cache(1, short.len() + 1), Logits::AllPositions).unwrap();
        for t in 0..short.len() {
            let d = max_abs_diff(&both.i((1, pad + t)).unwrap().to_vec1().unwrap(), &alone.i((0, t)).unwrap().to_vec1().unwrap());
            assert!(d <= TOL, "{path}, padded row, position {t}: {d}");
        }
        for t in 0..long.len() {
            let d = max_abs_diff(&both.i((0, t)).unwrap().to_vec1().unwrap(), &r.logits[t]);
            assert!(d <= TOL, "{path}, unpadded row, position {t}: {d}");
        }
        // One more decode step on the padded batch still matches each row on its own.
        let next = model.forward(&[vec![9], vec![9]], &mut cache, Logits::LastPosition).unwrap();
        let mut own = model.new_cache(1, short.len() + 1);
        model.forward(&[short], &mut own, Logits::LastPosition).unwrap();
        let own_next = model.forward(&[vec![9]], &mut own, Logits::LastPosition).unwrap();
        let d = max_abs_diff(&next.i(1).unwrap().to_vec1().unwrap(), &own_next.i(0).unwrap().to_vec1().unwrap());
        assert!(d <= TOL, "{path}, padded row, decode step: {d}");
    });
}
