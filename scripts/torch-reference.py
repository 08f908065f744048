#!/usr/bin/env python3
"""Times GPT-2 small in PyTorch eager on the shapes `gpt2 bench` times, and writes the same JSON.

    python scripts/torch-reference.py [--threads N] [--json FILE] [--device cpu|cuda] [--dtype f32|f16|bf16]
                                      [--isa auto|avx512|avx2|sse4]

The model is `GPT2LMHeadModel` from a default `GPT2Config` (GPT-2 small) with random weights:
speed does not depend on the values. Cases, each warmed up, then timed over repeats:
  forward_b1_t8     model(ids) for B=1, T=8, logits for every position
  prefill_b1_t8     B=1, T=8, logits for the last position only (logits_to_keep=1)
  prefill_b1_t128   B=1, T=128, likewise
  decode_bB_ctx32   one decode step with a 32-position KV cache, B = 1, 8, 16
Compare with `gpt2 bench --json FILE` by case name.

--isa caps the CPU instructions PyTorch uses, as COURSE_CPU_KERNELS (or `gpt2 bench --kernels`)
caps the engine's, so that a comparison on one machine stands for a CPU without AVX-512:
ATen's kernels (ATEN_CPU_CAPABILITY), MKL's (MKL_ENABLE_INSTRUCTIONS) and oneDNN's
(ONEDNN_MAX_CPU_ISA) are limited together. `avx2` pairs with `gpt2 bench --kernels avx2`;
`sse4` is the nearest PyTorch comes to the engine's `portable` path (it still runs MKL).
The variables are read when torch loads, so they are set before it is imported.
"""
import argparse
import copy
import json
import os
import statistics
import time

# What each --isa sets; `auto` leaves the libraries to pick the widest the CPU has.
ISA_ENV = {
    "auto": {},
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "sse4": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}


def timed(fn, device, warmup, repeats, setup=lambda: None):
    """Times fn(setup()) after warm-up; setup runs outside the clock."""
    for _ in range(warmup):
        fn(setup())
    samples = []
    for _ in range(repeats):
        arg = setup()
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn(arg)
        if device == "cuda":
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": statistics.median(samples), "min_ms": min(samples), "max_ms": max(samples), "repeats": repeats}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    ap.add_argument("--isa", default="auto", choices=list(ISA_ENV),
                    help="cap the CPU instructions of ATen, MKL and oneDNN (see above)")
    ap.add_argument("--json")
    args = ap.parse_args()
    os.environ.update(ISA_ENV[args.isa])
    global torch
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.set_num_threads(args.threads)
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).eval().to(device=args.device, dtype=dtype)
    vocab = model.config.vocab_size

    def ids(batch, seq):
        return torch.tensor([[(b * 7919 + t * 104729) % vocab for t in range(seq)] for b in range(batch)], device=args.device)

    results = []
    with torch.inference_mode():
        x8 = ids(1, 8)
        results.append({"name": "forward_b1_t8", **timed(lambda _: model(x8), args.device, args.warmup, args.repeats)})
        for tokens in (8, 128):
            x = ids(1, tokens)
            results.append({"name": f"prefill_b1_t{tokens}",
                            **timed(lambda _: model(x, logits_to_keep=1), args.device, args.warmup, args.repeats)})
        for batch in (1, 8, 16):
            cache = model(ids(batch, 32), use_cache=True, logits_to_keep=1).past_key_values
            step = ids(batch, 1)
            # Each timed step decodes column 33 from its own copy of the 32-column cache.
            r = timed(lambda c: model(step, past_key_values=c, use_cache=True, logits_to_keep=1),
                      args.device, args.warmup, args.repeats, setup=lambda: copy.deepcopy(cache))
            results.append({"name": f"decode_b{batch}_ctx32", **r})

    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: "unknown")()
    report = {"threads": torch.get_num_threads(), "device": args.device, "dtype": args.dtype,
              "isa": args.isa, "isa_env": ISA_ENV[args.isa], "aten_cpu_capability": capability,
              "engine": f"torch {torch.__version__} eager", "results": results}
    print(f"torch reference: {report['threads']} threads, {args.device}, {args.dtype}, ISA {args.isa} (ATen: {capability})")
    print(f"{'case':<20} {'median ms':>11} {'min ms':>11} {'max ms':>11}")
    for r in results:
        print(f"{r['name']:<20} {r['median_ms']:>11.2f} {r['min_ms']:>11.2f} {r['max_ms']:>11.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
