#!/usr/bin/env python3
"""The PyTorch Profiler recipe's steps, applied to GPT-2 small, for the book's side-by-side appendix.

The appendix "PyTorch Profiler to candle, side by side" shows this file's anchored parts next to
the course's candle equivalents, so the Python a reader sees is code that runs. It uses a GPT-2
small with random weights (no download), like the course's synthetic checkpoint. The steps are
written flat, top to bottom, as the recipe presents them.

    pip install torch transformers
    python3 book/examples/pytorch_profiler_recipe.py [--out target/torch-recipe]

scripts/test-book.sh byte-compiles this file always, and runs it when torch and transformers
are importable.
"""

import argparse
from pathlib import Path

# ANCHOR: imports
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule
# ANCHOR_END: imports
from transformers import GPT2Config, GPT2LMHeadModel

parser = argparse.ArgumentParser(description="The PyTorch Profiler recipe on GPT-2 small (random weights).")
parser.add_argument("--out", type=Path, default=Path("target/torch-recipe"), help="folder for trace.json")
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--seq", type=int, default=8)
args = parser.parse_args()
args.out.mkdir(parents=True, exist_ok=True)

# ANCHOR: model
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config()).eval()  # GPT-2 small's shapes, random weights
ids = torch.randint(0, model.config.vocab_size, (args.batch, args.seq))
# ANCHOR_END: model

with torch.inference_mode():
    model(ids)  # warm-up: allocation and thread start-up stay out of the profile

# ANCHOR: profile
# Inference mode, as a server runs: without it autograd records every op for a backward pass
# that never comes, and that bookkeeping lands in the table compared with the course's.
with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    with record_function("model_inference"):
        model(ids)
# ANCHOR_END: profile

# ANCHOR: table
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
# ANCHOR_END: table

# ANCHOR: group_by_input_shape
print(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=10))
# ANCHOR_END: group_by_input_shape

# ANCHOR: trace
prof.export_chrome_trace(str(args.out / "trace.json"))
# ANCHOR_END: trace


# ANCHOR: schedule
def print_table(prof):
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))


steps = schedule(wait=1, warmup=1, active=3, repeat=1)
with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU], schedule=steps, on_trace_ready=print_table) as prof:
    for _ in range(5):
        model(ids)
        prof.step()
# ANCHOR_END: schedule
