//! bf16 and f16 weights on the CPU, on every kernel path this CPU supports: the model's logits
//! against Hugging Face transformers run in f32 on the same rounded weights, and its greedy
//! tokens against the f32 engine's.
//!
//! The bounds, and where they come from:
//! - On the `avx512` and `avx2` paths the packed products widen each stored half-type value to
//!   f32 exactly and every other op runs in f32 on the rounded values (LayerNorm gains, biases
//!   and embeddings are loaded in the half type too, then widened). So the arithmetic is f32
//!   arithmetic on the very values transformers multiplies, and the f32 engine's bound holds:
//!   [`F32_TOL`].
//! - Except where the `avx512` path multiplies bf16 weights with `avx512_bf16`'s dot product
//!   (products of 8 rows or more, on a CPU that has it): there the product's input `x` is
//!   rounded to bf16 first, a relative error of at most `u` on each of its values, and so of at
//!   most `u · Σ|x·w|` on each output. A logit's deepest chain passes through
//!   [`ROUNDED_PRODUCTS_PER_LAYER`] such products a layer and the head; as above, to first order
//!   their errors add and LayerNorm renormalises, so the bound grows by
//!   `(4 · layers + 1) · u · max |logit|`.
//! - On the `portable` path candle's ops run in the half type: every op's output is rounded to
//!   it, a relative error of at most its unit roundoff `u` (2⁻⁸ for bf16, 2⁻¹¹ for f16). The
//!   fixture's deepest chain from the embedding to a logit passes through
//!   [`ROUNDINGS_PER_LAYER`] rounded outputs a layer, plus one per key in softmax's sum (candle
//!   accumulates it in the half type), plus [`ROUNDINGS_OUTSIDE`] outside the blocks; to first
//!   order their relative errors add, and LayerNorm renormalises the residual stream, so that a
//!   logit is off by at most `roundings · u · max |logit|` ([`bound`]). That is a
//!   worst case: rounding errors of both signs mostly cancel, and the test prints the figure.
//! - Greedy tokens may part from the f32 engine's only where the f32 engine's choice leads the
//!   half model's by less than the half type can move a logit: twice the largest change the
//!   rounding of the weights makes to transformers' own logits (the reference's f32 and
//!   rounded-weight rows), plus the bound above.

mod common;

use candle_core::{DType, Device, IndexOp};
use common::{fixture, max_abs_diff, on_each_path, reference, rounded_reference, tiny_model};
use engine::cpu::{packed_matmul, KernelPath};
use gpt2::CausalLm;
use gpt2::{generate, Flow, Logits, Model, Request, Sampling};

const HALF: [DType; 2] = [DType::BF16, DType::F16];

/// The f32 engine's bound against transformers (`parity.rs`).
const F32_TOL: f32 = 1e-4;

/// Outputs a block rounds along its deepest chain on the `portable` path: ln_1, c_attn, the
/// bias, the split heads, q·kᵀ (scaled), the mask, softmax, ·v, c_proj, its bias, the
/// residual; ln_2, c_fc, its bias, GELU, c_proj, its bias, the residual.
const ROUNDINGS_PER_LAYER: usize = 18;
/// The embedding sum, ln_f and the head.
const ROUNDINGS_OUTSIDE: usize = 3;
/// Dense products a block's deepest chain passes through: c_attn, attn.c_proj, c_fc,
/// mlp.c_proj (the head is one more).
const ROUNDED_PRODUCTS_PER_LAYER: usize = 4;

fn unit_roundoff(dtype: DType) -> f32 {
    match dtype {
        DType::BF16 => 2f32.powi(-8),
        DType::F16 => 2f32.powi(-11),
        _ => 2f32.powi(-24),
    }
}

fn half_model(path: KernelPath, dtype: DType) -> Model {
    gpt2::weights::load(&fixture(), &Device::Cpu, dtype, path)
        .expect("the committed fixture loads in a half type")
}

/// The largest logit difference the model may show against transformers on the same rounded
/// weights, on its path (see the module docs), for logits up to `largest` in magnitude over
/// sequences of up to `keys` positions, whose largest product has `rows` rows.
fn bound(model: &Model, dtype: DType, largest: f32, keys: usize, rows: usize) -> f32 {
    if model.activation_dtype() == DType::F32 {
        if !packed_matmul::rounds_activations(model.kernel_path(), dtype, rows) {
            return F32_TOL;
        }
        return F32_TOL
            + (model.config().n_layer * ROUNDED_PRODUCTS_PER_LAYER + 1) as f32
                * unit_roundoff(DType::BF16)
                * largest;
    }
    (model.config().n_layer * (ROUNDINGS_PER_LAYER + keys) + ROUNDINGS_OUTSIDE) as f32
        * unit_roundoff(dtype)
        * largest
}

/// The largest magnitude among rows of logits.
fn largest(rows: &[Vec<f32>]) -> f32 {
    rows.iter().flatten().fold(0f32, |m, v| m.max(v.abs()))
}

#[test]
fn the_weights_are_held_in_the_half_type_and_the_activations_where_the_path_runs_them() {
    on_each_path(|path| {
        for dtype in HALF {
            let model = half_model(path, dtype);
            assert_eq!(model.dtype(), dtype, "{path}");
            let activations = if path == KernelPath::Portable {
                dtype
            } else {
                DType::F32
            };
            assert_eq!(model.activation_dtype(), activations, "{path} {dtype:?}");
        }
    });
}

#[test]
fn logits_match_transformers_on_the_same_rounded_weights() {
    let r = reference();
    on_each_path(|path| {
        for dtype in HALF {
            let theirs = rounded_reference(dtype);
            let model = half_model(path, dtype);
            let bound = bound(&model, dtype, largest(&theirs), r.ids.len(), r.ids.len());
            let logits = model
                .forward_one(
                    &r.ids,
                    &mut model.new_cache(r.ids.len()),
                    Logits::AllPositions,
                )
                .unwrap();
            let rows: Vec<Vec<f32>> = logits.to_vec2().unwrap();
            let worst = rows
                .iter()
                .zip(&theirs)
                .map(|(ours, theirs)| max_abs_diff(ours, theirs))
                .fold(0f32, f32::max);
            eprintln!(
                "{path} {dtype:?}: largest |logit - transformers'| {worst:.2e}, bound {bound:.2e}"
            );
            assert!(
                worst <= bound,
                "{path} {dtype:?}: max |diff| {worst} over the bound {bound}"
            );
        }
    });
}

#[test]
fn decoding_from_the_cache_matches_the_full_forward() {
    let r = reference();
    on_each_path(|path| {
        for dtype in HALF {
            let model = half_model(path, dtype);
            let full: Vec<Vec<f32>> = model
                .forward_one(
                    &r.ids,
                    &mut model.new_cache(r.ids.len()),
                    Logits::AllPositions,
                )
                .unwrap()
                .to_vec2()
                .unwrap();
            let mut cache = model.new_cache(r.ids.len());
            model
                .forward_one(&r.ids[..4], &mut cache, Logits::None)
                .unwrap();
            // The same model both ways: the f32 bound on the packed paths (plus the dot product's
            // rounding of x in the full forward, where it runs); the half type's rounding of a
            // differently ordered sum on portable.
            let tol = bound(&model, dtype, largest(&full), r.ids.len(), r.ids.len());
            for (t, want) in full.iter().enumerate().skip(4) {
                let step = model
                    .forward_one(&[r.ids[t]], &mut cache, Logits::LastPosition)
                    .unwrap();
                let d = max_abs_diff(&step.i(0).unwrap().to_vec1().unwrap(), want);
                assert!(
                    d <= tol,
                    "{path} {dtype:?}, decode position {t}: {d} over {tol}"
                );
            }
        }
    });
}

fn greedy_tokens(model: &Model, prompt: &[u32], n: usize) -> Vec<u32> {
    let req = Request {
        prompt: prompt.to_vec(),
        max_tokens: n,
        sampling: Sampling::greedy(),
        stop_at_eos: false,
    };
    generate(model, &[req], &mut |_| Flow::Continue)
        .unwrap()
        .remove(0)
        .tokens
}

#[test]
fn greedy_tokens_follow_the_f32_engine_or_part_at_a_near_tie() {
    let r = reference();
    const TOKENS: usize = 40;
    on_each_path(|path| {
        let f32_model = tiny_model(path);
        let want = greedy_tokens(&f32_model, &r.ids, TOKENS);
        for dtype in HALF {
            // How far rounding the weights moves transformers' own logits.
            let moved = r
                .logits
                .iter()
                .zip(&rounded_reference(dtype))
                .map(|(a, b)| max_abs_diff(a, b))
                .fold(0f32, f32::max);
            let model = half_model(path, dtype);
            // What may tell the two apart: the weights' rounding, plus the half type's own
            // arithmetic where the activations run in it (portable).
            let allowed = 2.0
                * (moved
                    + bound(
                        &model,
                        dtype,
                        largest(&r.logits),
                        r.ids.len() + TOKENS,
                        r.ids.len(),
                    ));
            let got = greedy_tokens(&model, &r.ids, TOKENS);
            let Some(at) = want.iter().zip(&got).position(|(a, b)| a != b) else {
                eprintln!("{path} {dtype:?}: the {TOKENS} greedy tokens equal the f32 engine's");
                continue;
            };
            // The f32 engine's logits at the parting: how far apart were its choice and the half model's?
            let mut context = r.ids.clone();
            context.extend(&want[..at]);
            let logits: Vec<f32> = f32_model
                .forward_one(
                    &context,
                    &mut f32_model.new_cache(context.len()),
                    Logits::LastPosition,
                )
                .unwrap()
                .i(0)
                .unwrap()
                .to_vec1()
                .unwrap();
            let gap = logits[want[at] as usize] - logits[got[at] as usize];
            eprintln!("{path} {dtype:?}: greedy tokens part at token {at} of {TOKENS} (f32 {} vs {}), where the f32 logits differ by {gap:.2e}; rounding the weights moves a logit by up to {moved:.2e} (allowed gap {allowed:.2e})", want[at], got[at]);
            assert!(gap <= allowed, "{path} {dtype:?}: parted at token {at} where the f32 engine's choice led by {gap}, over the {allowed} the half type can move a logit");
        }
    });
}
