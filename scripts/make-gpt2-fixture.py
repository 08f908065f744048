#!/usr/bin/env python3
"""Builds the tiny GPT-2 parity fixture with Hugging Face transformers.

Writes crates/gpt2/tests/fixtures/tiny-gpt2/ (a `save_pretrained` directory: config.json and
model.safetensors, no tokenizer) and tiny-gpt2-reference.json: token ids, transformers' logits
for every position (the Rust tests match them to 1e-4), and the logits of the same model with
every parameter rounded to bf16 and to f16 and then run in f32 (`rounded_weights_logits`, which
the half-type weight tests of crates/gpt2/tests/half_weights.rs match).

An existing checkpoint is kept and only the reference is written again, so that new reference
rows do not change the committed weights; `--new-weights` draws the weights afresh.

Needs torch and transformers (install them in a virtual environment, e.g.
`python3 -m venv target/pyenv && target/pyenv/bin/pip install torch transformers`), then:
    target/pyenv/bin/python scripts/make-gpt2-fixture.py [--new-weights]
"""
import copy
import json
import pathlib
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

OUT = pathlib.Path(__file__).resolve().parents[1] / "crates/gpt2/tests/fixtures/tiny-gpt2"
IDS = [[5, 17, 300, 42, 511, 0, 99, 250, 7, 128, 64, 3]]


def new_weights() -> None:
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


def logits_of(model) -> list:
    with torch.no_grad():
        return model(torch.tensor(IDS)).logits[0].tolist()


def rounded(model, dtype):
    """The model with every parameter rounded to `dtype` and held in f32 again."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(dtype).to(torch.float32))
    return model


def main() -> None:
    if "--new-weights" in sys.argv[1:] or not (OUT / "model.safetensors").is_file():
        new_weights()
    model = GPT2LMHeadModel.from_pretrained(OUT, torch_dtype=torch.float32).eval()
    reference = {
        "ids": IDS,
        "logits": logits_of(model),
        "rounded_weights_logits": {name: logits_of(rounded(model, dtype)) for name, dtype in [("bf16", torch.bfloat16), ("f16", torch.float16)]},
        "made_with": {"torch": torch.__version__, "transformers": __import__("transformers").__version__},
    }
    (OUT.parent / "tiny-gpt2-reference.json").write_text(json.dumps(reference))
    print(f"wrote {OUT} and {OUT.parent / 'tiny-gpt2-reference.json'}")


if __name__ == "__main__":
    main()
