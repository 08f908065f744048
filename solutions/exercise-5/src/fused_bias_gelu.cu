// The CUDA side of the fused bias-add + GELU: `out = gelu_tanh(x + bias)` in one pass, each
// element of `x` read once and each output written once (candle's unfused ops write `x + bias`
// to memory and read it back for the GELU).
//
// build.rs compiles this file to PTX when the crate is built with `--features cuda`;
// src/fused/cuda.rs loads it and launches one `fused_bias_gelu_<dtype>` kernel per call, with
// at least one thread per element. Only for a machine with an NVIDIA GPU: the CPU op in
// src/fused.rs is the exercise everyone does.
//
// Solution: `gelu_tanh` and the body of `fused_bias_gelu` written.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

// Loads and stores go through float: f16 and bf16 inputs are widened, computed in f32 and
// rounded once at the end, so half precision loses nothing in the middle of the formula.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// ANCHOR: kernel
// GELU with the tanh approximation (GPT-2's `gelu_new`):
// 0.5 · v · (1 + tanh(√(2/π) · (v + 0.044715 · v³))).
__device__ __forceinline__ float gelu_tanh(float v) {
    const float sqrt_2_over_pi = 0.7978845608f;
    // v³ as (v · v) · v, in the order candle's own CUDA gelu uses, so the two round alike.
    const float cube = v * v * v;
    return 0.5f * v * (1.0f + tanhf(sqrt_2_over_pi * (v + 0.044715f * cube)));
}

// `x` is `n` values, row after row of `width`; `bias` is one row of `width`.
template <typename T>
__device__ void fused_bias_gelu(const T *x, const T *bias, T *out, unsigned int n, unsigned int width) {
    // One thread per element. Neighbouring threads touch neighbouring addresses of `x` and
    // `out` (coalesced), and the `width` bias values stay in cache, shared by every row.
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;  // the last block has more threads than elements left
    }
    const float v = to_float(x[i]) + to_float(bias[i % width]);
    out[i] = from_float<T>(gelu_tanh(v));
}
// ANCHOR_END: kernel

// The entry points the Rust side loads by name: fused_bias_gelu_f32, _f16, _bf16 (candle's
// `kernel_name::<T>("fused_bias_gelu")`).
#define ENTRY(T, SUFFIX)                                                                               \
    extern "C" __global__ void fused_bias_gelu_##SUFFIX(const T *x, const T *bias, T *out, unsigned int n, \
                                                        unsigned int width) {                          \
        fused_bias_gelu<T>(x, bias, out, n, width);                                                    \
    }

ENTRY(float, f32)
ENTRY(__half, f16)
ENTRY(__nv_bfloat16, bf16)
