#!/usr/bin/env python3
"""The article's PyTorch snippet, as the course writes it: one GPT-2 small forward under
torch.profiler, and the ten most expensive ops by self CPU time.

The appendix "PyTorch Profiler to candle, side by side" shows the anchored part below beside
exercise 3 (`cargo run -p exercise-3`), which profiles the same forward (batch 1, 8 tokens) in
candle and prints the same table.

    pip install torch transformers
    python3 book/examples/profile_gpt2.py            # openai-community/gpt2 from the Hugging Face Hub
    python3 book/examples/profile_gpt2.py --local    # no Hub: GPT-2 small's config, random weights

Random token ids stand in for a prompt (no tokenizer to download): the ops and their shapes,
which are what the table measures, are the same for any 8 tokens. scripts/test-book.sh
byte-compiles this file.
"""

# ANCHOR: snippet
import sys
import torch
from torch.profiler import ProfilerActivity, profile
from transformers import GPT2Config, GPT2LMHeadModel

hub = "--local" not in sys.argv  # --local: GPT-2 small's shapes with random weights, no download
model = GPT2LMHeadModel.from_pretrained("openai-community/gpt2") if hub else GPT2LMHeadModel(GPT2Config())
model.eval()
ids = torch.randint(0, model.config.vocab_size, (1, 8))  # batch 1, 8 tokens, as in exercise 3

with torch.inference_mode():
    model(ids)  # warm-up: one-time set-up stays out of the profile
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        model(ids)

print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
# ANCHOR_END: snippet
