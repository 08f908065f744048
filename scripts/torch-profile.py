#!/usr/bin/env python3
"""Profiles the forward pass `gpt2 profile` profiles, with the PyTorch Profiler, for comparison.

    python scripts/torch-profile.py [--threads N] [--batch 1] [--seq 8] [--overhead 30] [--row-limit 10]
                                    [--device cpu|cuda] [--json FILE]

GPT-2 small (`GPT2LMHeadModel` from a default `GPT2Config`, random weights) runs `model(ids)`
(logits for every position) under `torch.profiler.profile` with a schedule (warm-up steps not
counted), and prints `key_averages().table(sort_by="self_cpu_time_total")` (on CUDA, sorted by
self CUDA time, with the CUDA activity recorded). With --overhead N it also measures the
profiler's own cost the way `gpt2 profile --overhead N` does: N forwards with and N without the
profiler, alternating, and compares their medians. --json writes the totals and the top rows
(times in microseconds summed over the active steps, as `gpt2 profile`'s report.json).
"""
import argparse
import json
import os
import statistics
import time

import torch
from torch.autograd import DeviceType
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
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    on_cuda = args.device == "cuda"
    model = GPT2LMHeadModel(GPT2Config()).eval().to(args.device)
    vocab = model.config.vocab_size
    ids = torch.tensor([[(b * 7919 + t * 104729 + 464) % vocab for t in range(args.seq)] for b in range(args.batch)],
                       device=args.device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])
    sort_by = "self_cuda_time_total" if on_cuda else "self_cpu_time_total"

    def sync():
        # Kernels run asynchronously: a host clock must wait for them.
        if on_cuda:
            torch.cuda.synchronize()

    with torch.inference_mode():
        sched = schedule(wait=0, warmup=args.warmup, active=args.active, repeat=1)
        with profile(activities=activities, schedule=sched, record_shapes=True) as prof:
            for _ in range(args.warmup + args.active):
                model(ids)
                prof.step()
        sync()
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.device}, forward B={args.batch} T={args.seq}")
        averages = prof.key_averages()
        print(averages.table(sort_by=sort_by, row_limit=args.row_limit))
        if args.json:
            write_json(args, averages, on_cuda)

        if args.overhead:
            plain, profiled = [], []
            for i in range(args.warmup + args.overhead):
                sync()
                start = time.perf_counter()
                model(ids)
                sync()
                p = (time.perf_counter() - start) * 1e3
                with profile(activities=activities, record_shapes=True):
                    start = time.perf_counter()
                    model(ids)
                    sync()
                    q = (time.perf_counter() - start) * 1e3
                if i >= args.warmup:
                    plain.append(p)
                    profiled.append(q)
            a, b = statistics.median(plain), statistics.median(profiled)
            print(f"unprofiled median {a:.3f} ms, profiled median {b:.3f} ms over {len(plain)} alternating repeats: "
                  f"overhead {(b / a - 1) * 100:+.2f}%")


def write_json(args, averages, on_cuda):
    """Totals and the top rows, in microseconds summed over the active steps."""
    def self_device_us(e):
        # Newer torch names it self_device_time_total; older releases self_cuda_time_total.
        return float(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0)))

    # ProfilerStep#N is the schedule's annotation around each whole step. Recent torch records it
    # on the stream as well, with the step's span as its "self CUDA" time, so it stays out of the
    # rows and of the CUDA total (as the table's own "Self CUDA time total" leaves it out).
    rows = [e for e in averages if not e.key.startswith("ProfilerStep")]
    key = self_device_us if on_cuda else (lambda e: float(e.self_cpu_time_total))
    rows.sort(key=key, reverse=True)
    report = {
        "engine": f"torch {torch.__version__} eager",
        "device": args.device,
        "batch": args.batch,
        "seq": args.seq,
        "active_steps": args.active,
        "totals": {
            # The host's total keeps ProfilerStep's own time (the step's work outside any op), as
            # the table's "Self CPU time total" does.
            "self_cpu_us": sum(float(e.self_cpu_time_total) for e in averages),
            # As the table's "Self CUDA time total": the kernels' own rows only (an op's row
            # repeats the time of the kernels it launched).
            "self_cuda_us": sum(self_device_us(e) for e in rows if e.device_type == DeviceType.CUDA) if on_cuda else None,
        },
        "rows": [{"name": e.key, "calls": e.count, "self_cpu_us": float(e.self_cpu_time_total),
                  "self_cuda_us": self_device_us(e) if on_cuda else None} for e in rows[:args.row_limit]],
    }
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
