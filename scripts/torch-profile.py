#!/usr/bin/env python3
"""Profiles the forward pass `gpt2 profile` profiles, with the PyTorch Profiler, for comparison.

    python scripts/torch-profile.py [--threads N] [--batch 1] [--seq 8] [--overhead 30] [--row-limit 10]

GPT-2 small (`GPT2LMHeadModel` from a default `GPT2Config`, random weights) runs `model(ids)`
(logits for every position) under `torch.profiler.profile` with a schedule (warm-up steps not
counted), and prints `key_averages().table(sort_by="self_cpu_time_total")`. With --overhead N it
also measures the profiler's own cost the way `gpt2 profile --overhead N` does: N forwards with
and N without the profiler, alternating, and compares their medians.
"""
import argparse
import os
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--active", type=int, default=5)
    ap.add_argument("--row-limit", type=int, default=10)
    ap.add_argument("--overhead", type=int, default=0, metavar="N")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    vocab = model.config.vocab_size
    ids = torch.tensor([[(b * 7919 + t * 104729 + 464) % vocab for t in range(args.seq)] for b in range(args.batch)])

    with torch.inference_mode():
        sched = schedule(wait=0, warmup=args.warmup, active=args.active, repeat=1)
        with profile(activities=[ProfilerActivity.CPU], schedule=sched, record_shapes=True) as prof:
            for _ in range(args.warmup + args.active):
                model(ids)
                prof.step()
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, forward B={args.batch} T={args.seq}")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.row_limit))

        if args.overhead:
            plain, profiled = [], []
            for i in range(args.warmup + args.overhead):
                start = time.perf_counter()
                model(ids)
                p = (time.perf_counter() - start) * 1e3
                with profile(activities=[ProfilerActivity.CPU], record_shapes=True):
                    start = time.perf_counter()
                    model(ids)
                    q = (time.perf_counter() - start) * 1e3
                if i >= args.warmup:
                    plain.append(p)
                    profiled.append(q)
            a, b = statistics.median(plain), statistics.median(profiled)
            print(f"unprofiled median {a:.3f} ms, profiled median {b:.3f} ms over {len(plain)} alternating repeats: "
                  f"overhead {(b / a - 1) * 100:+.2f}%")


if __name__ == "__main__":
    main()
