#!/usr/bin/env python3
"""Builds the tiny GPT-2 parity fixture with Hugging Face transformers.

Writes crates/gpt2/tests/fixtures/tiny-gpt2/ (a `save_pretrained` directory: config.json and
model.safetensors, no tokenizer) and reference.json (token ids and transformers' logits for
every position). The Rust tests load the same directory and must match these logits to 1e-4.

Needs torch and transformers (install them in a virtual environment, e.g.
`python3 -m venv target/pyenv && target/pyenv/bin/pip install torch transformers`), then:
    target/pyenv/bin/python scripts/make-gpt2-fixture.py
"""
import json
import pathlib

import torch
from transformers import GPT2Config, GPT2LMHeadModel

OUT = pathlib.Path(__file__).resolve().parents[1] / "crates/gpt2/tests/fixtures/tiny-gpt2"


def main() -> None:
    torch.manual_seed(1234)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64,
                        bos_token_id=511, eos_token_id=511)
    model = GPT2LMHeadModel(config).eval()
    # The default initialisation leaves LayerNorm gains at 1 and every bias at 0; perturb
    # all parameters so the parity test exercises each of them.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))
    OUT.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(OUT, safe_serialization=True)

    ids = [[5, 17, 300, 42, 511, 0, 99, 250, 7, 128, 64, 3]]
    with torch.no_grad():
        logits = model(torch.tensor(ids)).logits
    reference = {
        "ids": ids,
        "logits": logits[0].tolist(),
        "made_with": {"torch": torch.__version__, "transformers": __import__("transformers").__version__},
    }
    (OUT.parent / "tiny-gpt2-reference.json").write_text(json.dumps(reference))
    print(f"wrote {OUT} and {OUT.parent / 'tiny-gpt2-reference.json'}")


if __name__ == "__main__":
    main()
