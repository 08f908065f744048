//! The checks of the learner's fused ops, which their `cargo test` runs: each stage against
//! candle's unfused ops, its shape, its saturation and its errors, on the CPU and, in a build with
//! `--features cuda`, on a GPU. [`stage_tests!`](crate::stage_tests) writes the tests that call
//! them into the learner's src/fused.rs, one module a stage, so `cargo test -p exercise-5 stage1`
//! checks stage 1 alone, before stage 2 is written.
//!
//! Stage 2's tests check it once it is written; until then they say so and pass, so that
//! `course check 5` grades a submission that stops at stage 1 (its feedback says what stage 1
//! showed and what to do next) and a GPU learner, for whom stage 2 is not required, passes
//! without it.

use crate::correctness::max_abs_error;
use crate::NOT_WRITTEN;
use candle_core::{DType, Device, Tensor};
use engine::ops::BiasActivation;

/// One test of a stage: `check` on `op`, the stage named `stage`; for a stage checked
/// `once_written` (stage 2), only once its `cpu_fwd` no longer answers that it is not written.
pub fn check(
    stage: &str,
    once_written: bool,
    test: &str,
    op: &dyn BiasActivation,
    check: fn(&str, &dyn BiasActivation),
) {
    if !once_written || stage2_written(test, op) {
        check(stage, op);
    }
}

/// Whether stage 2 is written: false, after saying so, while its `cpu_fwd` still answers
/// that it is not written; any other answer (a result, or another error) is checked.
fn stage2_written(test: &str, op: &dyn BiasActivation) -> bool {
    let x = Tensor::zeros((1, 4), DType::F32, &Device::Cpu).unwrap();
    let bias = Tensor::zeros(4, DType::F32, &Device::Cpu).unwrap();
    match op.forward(&x, &bias) {
        Err(e) if e.to_string().contains(NOT_WRITTEN) => {
            println!("stage2::{test}: stage 2 (FastFusedBiasGelu in src/fused.rs) is not written yet, so it was not checked");
            false
        }
        _ => true,
    }
}

/// Within 1e-5 of candle's unfused ops on random inputs of a few shapes.
pub fn matches_the_unfused_ops(stage: &str, op: &dyn BiasActivation) {
    // GPT-2 small's MLP width, a few token counts (one token, a decode batch, a prompt
    // large enough for stage 2's threads), and an odd shape.
    for (tokens, width) in [(1, 3072), (8, 3072), (64, 3072), (5, 7)] {
        let x = Tensor::randn(0f32, 3.0, (tokens, width), &Device::Cpu).unwrap();
        let bias = Tensor::randn(0f32, 1.0, width, &Device::Cpu).unwrap();
        let err = max_abs_error(op, &x, &bias).unwrap();
        assert!(
            err <= 1e-5,
            "{stage}, {tokens}x{width}: largest difference {err} is over 1e-5"
        );
    }
}

/// The output has the input's shape.
pub fn keeps_the_shape(stage: &str, op: &dyn BiasActivation) {
    let x = Tensor::zeros((4, 16), DType::F32, &Device::Cpu).unwrap();
    let bias = Tensor::ones(16, DType::F32, &Device::Cpu).unwrap();
    assert_eq!(op.forward(&x, &bias).unwrap().dims(), &[4, 16], "{stage}");
}

/// Far from zero, GELU's limits: the identity for large positive inputs, zero for large negative.
pub fn saturates_like_gelu(stage: &str, op: &dyn BiasActivation) {
    // Far from zero GELU is the identity (large positive) or zero (large negative).
    let x = Tensor::new(&[[-30.0f32, -10.0, 0.0, 10.0, 30.0]], &Device::Cpu).unwrap();
    let bias = Tensor::zeros(5, DType::F32, &Device::Cpu).unwrap();
    let y: Vec<f32> = op
        .forward(&x, &bias)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let expected = [0.0, 0.0, 0.0, 10.0, 30.0];
    for (got, want) in y.iter().zip(expected) {
        assert!(
            (got - want).abs() <= 1e-5,
            "{stage}: gelu gave {got}, expected {want}"
        );
    }
}

/// A bias of the wrong width, and half-type tensors on the CPU, are errors that say what to run.
pub fn errors_say_what_to_run(stage: &str, op: &dyn BiasActivation) {
    let x = Tensor::zeros((2, 8), DType::F32, &Device::Cpu).unwrap();
    let bias = Tensor::zeros(7, DType::F32, &Device::Cpu).unwrap();
    let err = op.forward(&x, &bias).unwrap_err().to_string();
    assert!(err.contains("bias has shape"), "{stage}: {err}");
    let half = Tensor::zeros((2, 8), DType::BF16, &Device::Cpu).unwrap();
    let half_bias = Tensor::zeros(8, DType::BF16, &Device::Cpu).unwrap();
    let err = op.forward(&half, &half_bias).unwrap_err().to_string();
    assert!(
        err.contains("f32")
            && err.contains("BF16")
            && err.contains("--dtype f32")
            && err.contains("--kernels"),
        "{stage}: {err}"
    );
}

/// The checks on a GPU.
#[cfg(feature = "cuda")]
pub mod cuda {
    use crate::correctness::{largest_difference, max_abs_error};
    use candle_core::{DType, Device, Tensor};
    use engine::ops::BiasActivation;

    /// CUDA device 0 when this build has the `cuda` feature and a GPU answers; otherwise prints
    /// that the CUDA check did not run, and why (a skip is never a silent pass).
    fn cuda_or_say_why(test: &str) -> Option<Device> {
        match Device::new_cuda(0) {
            Ok(device) => Some(device),
            Err(e) => {
                println!("{test}: SKIPPED on CUDA, CUDA was not available ({e}); only the CPU op was checked");
                None
            }
        }
    }

    /// The op on CUDA against candle's unfused ops, on the GPU and on the CPU, in f32.
    pub fn matches_the_unfused_ops_within_1e_5_on_cuda(op: &dyn BiasActivation) {
        let Some(cuda) = cuda_or_say_why("matches_the_unfused_ops_within_1e_5_on_cuda") else {
            return;
        };
        // The same shapes as on the CPU, plus one that is not a multiple of the block size
        // and a row wider than a block.
        for (tokens, width) in [(1, 3072), (8, 3072), (64, 3072), (5, 7), (3, 1000)] {
            let x_cpu = Tensor::randn(0f32, 3.0, (tokens, width), &Device::Cpu).unwrap();
            let bias_cpu = Tensor::randn(0f32, 1.0, width, &Device::Cpu).unwrap();
            let (x, bias) = (
                x_cpu.to_device(&cuda).unwrap(),
                bias_cpu.to_device(&cuda).unwrap(),
            );
            let err = max_abs_error(op, &x, &bias).unwrap();
            assert!(
                err <= 1e-5,
                "CUDA {tokens}x{width}: largest difference {err} is over 1e-5"
            );
            // And across devices: the kernel against candle's unfused ops on the CPU.
            let cpu = x_cpu.broadcast_add(&bias_cpu).unwrap().gelu().unwrap();
            let gpu = op
                .forward(&x, &bias)
                .unwrap()
                .to_device(&Device::Cpu)
                .unwrap();
            let err = largest_difference(&gpu, &cpu).unwrap();
            assert!(
                err <= 1e-5,
                "CUDA {tokens}x{width}: {err} from the CPU's unfused ops, over 1e-5"
            );
        }
    }

    /// The op on CUDA in f16 and bf16: computed in f32, rounded once.
    pub fn half_precision_on_cuda_rounds_only_the_result(op: &dyn BiasActivation) {
        let Some(cuda) = cuda_or_say_why("half_precision_on_cuda_rounds_only_the_result") else {
            return;
        };
        // The kernel computes in f32 and rounds once, so it stays within about half a unit in
        // the last place of the exact result: 2^-11 relative for f16, 2^-8 for bf16.
        for (dtype, tolerance) in [(DType::F16, 1e-3f32), (DType::BF16, 8e-3)] {
            let x = Tensor::randn(0f32, 3.0, (8, 3072), &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .to_device(&cuda)
                .unwrap();
            let bias = Tensor::randn(0f32, 1.0, 3072, &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .to_device(&cuda)
                .unwrap();
            let got = op.forward(&x, &bias).unwrap();
            assert_eq!(got.dtype(), dtype);
            // The reference: the same (rounded) inputs, computed in f32 by candle's own ops.
            let exact = x
                .to_dtype(DType::F32)
                .unwrap()
                .broadcast_add(&bias.to_dtype(DType::F32).unwrap())
                .unwrap()
                .gelu()
                .unwrap();
            let got: Vec<f32> = got
                .to_dtype(DType::F32)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            let exact: Vec<f32> = exact.flatten_all().unwrap().to_vec1().unwrap();
            for (g, e) in got.iter().zip(&exact) {
                assert!(
                    (g - e).abs() <= tolerance * e.abs().max(1.0),
                    "{dtype:?}: got {g}, expected {e}"
                );
            }
        }
    }
}

/// The tests of the learner's two stages (the types of their src/fused.rs, each a candle custom
/// op), written where it is invoked: `tests::stage1::…` and `tests::stage2::…`, each test one
/// [`check`](crate::checks::check), and in a build with `--features cuda` stage 1's on a GPU.
#[macro_export]
macro_rules! stage_tests {
    ($stage1:ident, $stage2:ident) => {
        #[cfg(test)]
        mod tests {
            /// Stage 1's checks.
            mod stage1 {
                $crate::stage_tests!(@stage "stage 1", super::super::$stage1, false);
            }

            /// Stage 2's checks, once stage 2 is written.
            mod stage2 {
                $crate::stage_tests!(@stage "stage 2", super::super::$stage2, true);
            }

            #[cfg(feature = "cuda")]
            #[test]
            fn matches_the_unfused_ops_within_1e_5_on_cuda() {
                let op = $crate::Fused(super::$stage1);
                $crate::checks::cuda::matches_the_unfused_ops_within_1e_5_on_cuda(&op);
            }

            #[cfg(feature = "cuda")]
            #[test]
            fn half_precision_on_cuda_rounds_only_the_result() {
                let op = $crate::Fused(super::$stage1);
                $crate::checks::cuda::half_precision_on_cuda_rounds_only_the_result(&op);
            }
        }
    };
    // One stage's tests, each named for what it checks.
    (@stage $stage:literal, $op:path, $once_written:literal) => {
        $crate::stage_tests!(@tests $stage, $op, $once_written;
            matches_the_unfused_ops_within_1e_5: matches_the_unfused_ops,
            keeps_the_shape: keeps_the_shape,
            saturates_like_gelu: saturates_like_gelu,
            a_bias_of_the_wrong_width_or_a_half_type_is_an_error_that_says_what_to_run:
                errors_say_what_to_run,
        );
    };
    (@tests $stage:literal, $op:path, $once_written:literal; $($test:ident: $check:ident,)*) => {
        $(
            #[test]
            fn $test() {
                let op = $crate::Fused($op);
                let check = $crate::checks::$check;
                $crate::checks::check($stage, $once_written, stringify!($test), &op, check);
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{exp, SQRT_2_OVER_PI};
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// A GELU of one value, as a stage computes it per element.
    type Gelu = fn(f32) -> f32;

    /// An op that applies its GELU to `x + bias` per element, as a learner's stage does.
    struct PerElement(Gelu);

    impl BiasActivation for PerElement {
        fn name(&self) -> &'static str {
            "per_element"
        }

        fn forward(&self, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
            let v = x.broadcast_add(bias)?;
            let out: Vec<f32> = v
                .flatten_all()?
                .to_vec1()?
                .into_iter()
                .map(self.0)
                .collect();
            Tensor::from_vec(out, v.shape(), v.device())
        }
    }

    /// Stage 2 as the exercise hands it out: says it is not written.
    struct Unwritten;

    impl BiasActivation for Unwritten {
        fn name(&self) -> &'static str {
            "unwritten"
        }

        fn forward(&self, _: &Tensor, _: &Tensor) -> candle_core::Result<Tensor> {
            candle_core::bail!("unwritten {NOT_WRITTEN}")
        }
    }

    fn u(v: f32, cubic: f32) -> f32 {
        SQRT_2_OVER_PI * (v + cubic * v * v * v)
    }

    /// Stage 1's formula, the right answer.
    fn tanh_form(v: f32) -> f32 {
        0.5 * v * (1.0 + u(v, 0.044_715).tanh())
    }

    /// Stage 2's formula: the same GELU in other words.
    fn exp_form(v: f32) -> f32 {
        v / (1.0 + exp(-2.0 * u(v, 0.044_715)))
    }

    /// The checks of a stage's formula, as the tests run them; whether all passed. (Its errors
    /// come from `inputs`, not from the formula.)
    fn passes(op: Gelu) -> bool {
        let op = PerElement(op);
        [
            matches_the_unfused_ops,
            keeps_the_shape,
            saturates_like_gelu,
        ]
        .into_iter()
        .all(|check| catch_unwind(AssertUnwindSafe(|| check("stage 1", &op))).is_ok())
    }

    #[test]
    fn the_right_formula_passes_in_either_form() {
        assert!(passes(tanh_form), "stage 1's tanh form");
        assert!(passes(exp_form), "stage 2's exp form");
    }

    #[test]
    fn look_alike_gelus_fail() {
        // A mistyped constant, the sigmoid approximation, the tanh term without its ½, and an
        // input off by 0.1, as a bias added twice would be (each close to GELU somewhere, none
        // within 1e-5 everywhere).
        let wrong: [(&str, Gelu); 4] = [
            ("0.04715", |v| 0.5 * v * (1.0 + u(v, 0.047_15).tanh())),
            ("v·σ(1.702v)", |v| v / (1.0 + (-1.702 * v).exp())),
            ("no ½", |v| v * (1.0 + u(v, 0.044_715).tanh()) - v / 2.0),
            ("off by 0.1", |v| tanh_form(v + 0.1)),
        ];
        for (name, op) in wrong {
            assert!(!passes(op), "{name} passed the checks");
        }
    }

    #[test]
    fn stage_2_is_checked_once_written_and_stage_1_always() {
        let unwritten = Unwritten;
        // Stage 2 unwritten: said and passed.
        check("stage 2", true, "t", &unwritten, matches_the_unfused_ops);
        // Stage 1 unwritten: a failure.
        let stage1 = catch_unwind(AssertUnwindSafe(|| {
            check("stage 1", false, "t", &unwritten, matches_the_unfused_ops)
        }));
        assert!(stage1.is_err());
        // Stage 2 written wrong: a failure too.
        let wrong = PerElement(|v| v);
        let stage2 = catch_unwind(AssertUnwindSafe(|| {
            check("stage 2", true, "t", &wrong, matches_the_unfused_ops)
        }));
        assert!(stage2.is_err());
    }
}
