#!/usr/bin/env python3
"""Times GPT-2 small in PyTorch eager on the shapes `gpt2 bench` times, and writes the same JSON.

    python scripts/torch-reference.py [--threads N] [--json FILE] [--device cpu|cuda] [--dtype f32|f16|bf16]

The model is `GPT2LMHeadModel` from a default `GPT2Config` (GPT-2 small) with random weights:
speed does not depend on the values. Cases, each warmed up, then timed over repeats:
  forward_b1_t8     model(ids) for B=1, T=8, logits for every position
  prefill_b1_t128   B=1, T=128, logits for the last position only (logits_to_keep=1)
  decode_bB_ctx32   one decode step with a 32-position KV cache, B = 1, 8, 16
Compare with `gpt2 bench --json FILE` by case name.
"""
import argparse
import copy
import json
import os
import statistics
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


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
    ap.add_argument("--json")
    args = ap.parse_args()
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
        x128 = ids(1, 128)
        results.append({"name": "prefill_b1_t128", **timed(lambda _: model(x128, logits_to_keep=1), args.device, args.warmup, args.repeats)})
        for batch in (1, 8, 16):
            cache = model(ids(batch, 32), use_cache=True, logits_to_keep=1).past_key_values
            step = ids(batch, 1)
            # Each timed step decodes column 33 from its own copy of the 32-column cache.
            r = timed(lambda c: model(step, past_key_values=c, use_cache=True, logits_to_keep=1),
                      args.device, args.warmup, args.repeats, setup=lambda: copy.deepcopy(cache))
            results.append({"name": f"decode_b{batch}_ctx32", **r})

    report = {"threads": torch.get_num_threads(), "device": args.device, "dtype": args.dtype,
              "engine": f"torch {torch.__version__} eager", "results": results}
    print(f"torch reference: {report['threads']} threads, {args.device}, {args.dtype}")
    print(f"{'case':<20} {'median ms':>11} {'min ms':>11} {'max ms':>11}")
    for r in results:
        print(f"{r['name']:<20} {r['median_ms']:>11.2f} {r['min_ms']:>11.2f} {r['max_ms']:>11.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
