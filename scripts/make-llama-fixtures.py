#!/usr/bin/env python3
"""Builds the tiny Llama-family parity fixtures with Hugging Face transformers.

One `save_pretrained` directory per variant under crates/llama/tests/fixtures/ (config.json and
model.safetensors, no tokenizer) and one reference file beside it, tiny-<variant>-reference.json:
token ids and transformers' logits for every position, which crates/llama/tests/parity.rs matches,
and `greedy`: the tokens transformers' `generate` picks greedily after those ids (GREEDY_TOKENS of
them, the end token not stopping it), which crates/llama/tests/generate.rs matches token for token.

The variants are the decoders the course's Llama engine implements, each with the option that
sets it apart switched on:
- llama:   separate output head, grouped-query attention (4 query heads over 2 key/value heads);
- llama3:  Llama 3.1/3.2's "llama3" rotary scaling, tied head (as Llama-3.2-1B);
- smollm2: tied head, rope_theta 100000, one key/value head per query head (as SmolLM2-135M);
- mistral: Mistral's config class (the same network without a sliding window);
- qwen2:   biases on the query, key and value projections;
- qwen3:   RMSNorm on each head's queries and keys, and a head_dim that is not hidden / heads.
Every parameter is perturbed (the default initialisation leaves norms at 1 and biases at 0).

An existing checkpoint is kept and only its reference is written again; `--new-weights` draws
the weights afresh. Needs torch and transformers in a virtual environment, e.g.
    python3 -m venv target/venv-torch && target/venv-torch/bin/pip install torch transformers
    target/venv-torch/bin/python scripts/make-llama-fixtures.py [--new-weights]
"""
import json
import pathlib
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[1] / "crates/llama/tests/fixtures"
IDS = [[5, 17, 300, 42, 511, 0, 99, 250, 7, 128, 64, 3]]
GREEDY_TOKENS = 24
COMMON = dict(vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
              rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)


def variants():
    llama3_rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
    return {
        "llama": transformers.LlamaConfig(**COMMON, tie_word_embeddings=False),
        "llama3": transformers.LlamaConfig(**COMMON, tie_word_embeddings=True, rope_scaling=llama3_rope),
        "smollm2": transformers.LlamaConfig(**{**COMMON, "num_key_value_heads": 4}, tie_word_embeddings=True, rope_theta=100000.0),
        "mistral": transformers.MistralConfig(**COMMON, tie_word_embeddings=False, sliding_window=None),
        "qwen2": transformers.Qwen2Config(**COMMON, tie_word_embeddings=True),
        "qwen3": transformers.Qwen3Config(**COMMON, head_dim=24, tie_word_embeddings=False),
    }


def new_weights(config, out: pathlib.Path) -> None:
    torch.manual_seed(1234)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)


def main() -> None:
    fresh = "--new-weights" in sys.argv[1:]
    for name, config in variants().items():
        out = ROOT / f"tiny-{name}"
        if fresh or not (out / "model.safetensors").is_file():
            new_weights(config, out)
        model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
        with torch.no_grad():
            logits = model(torch.tensor(IDS)).logits[0].tolist()
            # No end token: the sequence runs its whole length, as with the server's ignore_eos.
            model.generation_config.eos_token_id = None
            generated = model.generate(torch.tensor(IDS), attention_mask=torch.ones(1, len(IDS[0]), dtype=torch.long),
                                 max_new_tokens=GREEDY_TOKENS, do_sample=False, pad_token_id=0)
            greedy = generated[0, len(IDS[0]):].tolist()
        reference = {"ids": IDS, "logits": logits, "greedy": greedy, "architecture": type(model).__name__,
                     "made_with": {"torch": torch.__version__, "transformers": transformers.__version__}}
        (ROOT / f"tiny-{name}-reference.json").write_text(json.dumps(reference))
        print(f"wrote {out} and tiny-{name}-reference.json ({type(model).__name__})")


if __name__ == "__main__":
    main()
