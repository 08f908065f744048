#!/usr/bin/env python3
"""Writes the tiny GGUF fixtures of the engine's GGUF reader and quantized kernels, with
llama.cpp's own Python writer (PyPI `gguf`, llama.cpp's gguf-py: GGUFWriter, and gguf.quants
for Q8_0, Q4_0 and BF16, bit-exact with ggml-quants.c's reference quantizers).

Into crates/llama/tests/fixtures/gguf/:
- tiny-llama-q8_0.gguf, tiny-llama-q4_0.gguf: crates/llama/tests/fixtures/tiny-llama's weights
  (make-llama-fixtures.py), every matrix in one quantized type, norms f32, as llama.cpp's
  q8_0 / q4_0 presets write them;
- tiny-llama-mixed.gguf, tiny-qwen2-mixed.gguf, tiny-qwen3-mixed.gguf: several types in one
  file (F32 norms and biases, F16, BF16, Q8_0, Q4_0 matrices), per matrix (MIXED below);
- tiny-qwen3-q1_0.gguf: a Qwen3 of the same layout with rows of 128 (Q1_0's block) and seeded
  random weights, every matrix Q1_0, embeddings and head included, norms f32: Bonsai 8B's
  recipe at toy size (no f32 original: its parity is against the dequantized weights);
- q1_0-reference.json: Q1_0 reference blocks: input values, the block bytes and the values
  they stand for, from the quantizer and dequantizer below, written here from ggml's definition
  (ggml-quants.c `quantize_row_q1_0_ref` / `dequantize_row_q1_0`; gguf-py has no Q1_0).

The metadata and tensor names are those llama.cpp's `convert_hf_to_gguf.py` writes for the
`llama`, `qwen2` and `qwen3` architectures, including its permutation of the query and key rows
for `llama` (LlamaModel.permute: each head's rows go from rotate-half order to interleaved
pairs), which the engine undoes at load. llama.cpp itself (the converter, llama-quantize) is not
run: it is not built on this machine.

Tokenizers: the tiny checkpoints have none (their vocabulary is 512), so one is trained here on
CORPUS below, and written into the files as the converter writes a checkpoint's tokenizer:
- the llama files carry a SentencePiece BPE model (sentencepiece's trainer, byte fallback, as
  Llama 2 and TinyLlama have), written as `_create_vocab_sentencepiece` does (tokenizer.ggml.model
  "llama": tokens, scores, token types); its `tokenizer.json` is what transformers'
  LlamaTokenizer converts from the same `tokenizer.model`;
- the qwen2 and qwen3 files carry a byte-level BPE with Qwen2's pre-tokenizer (the `tokenizers`
  trainer), written as `_set_vocab_gpt2` does (tokenizer.ggml.model "gpt2", pre "qwen2", tokens,
  token types, merges), and the qwen3 file a ChatML chat template (tokenizer.chat_template);
- special ids and the template go through gguf-py's own SpecialVocab, as in the converter.
Each tokenizer.json is committed beside the files (tiny-llama-tokenizer.json,
tiny-qwen-tokenizer.json): the engine's tokenizer made from a file's metadata must encode and
decode as it does.

    target/pyenv/bin/pip install gguf safetensors numpy sentencepiece protobuf tokenizers transformers
    target/pyenv/bin/python scripts/make-gguf-fixtures.py
"""
import json
import pathlib
import shutil
import tempfile

import numpy as np
from safetensors.numpy import load_file

import gguf
from gguf import GGMLQuantizationType as T

ROOT = pathlib.Path(__file__).resolve().parents[1] / "crates/llama/tests/fixtures"
OUT = ROOT / "gguf"

# The type of each matrix in the mixed files: every type the engine reads in one file.
MIXED = {
    "attn_q": T.Q4_0,
    "attn_k": T.Q8_0,
    "attn_v": T.F16,
    "attn_output": T.BF16,
    "ffn_gate": T.Q8_0,
    "ffn_up": T.Q4_0,
    "ffn_down": T.Q8_0,
    "token_embd": T.Q8_0,
    "output": T.F16,
}

HF_TO_GGUF = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
}


def gguf_name(hf: str) -> str:
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".")
    assert parts[:2] == ["model", "layers"], hf
    layer, rest, kind = parts[2], ".".join(parts[3:-1]), parts[-1]
    return f"blk.{layer}.{HF_TO_GGUF[rest]}.{kind}"


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute: within each head, row j*(d/2)+i goes to 2i+j."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def stored(arr: np.ndarray, qtype: T):
    """`arr` as GGUFWriter takes it for `qtype`: raw blocks for the quantized types and BF16."""
    if qtype == T.F32:
        return arr.astype(np.float32), None
    if qtype == T.F16:
        return arr.astype(np.float16), None
    return gguf.quants.quantize(arr.astype(np.float32), qtype), qtype


def write(path: pathlib.Path, arch: str, cfg: dict, tensors: dict, types, vocab=None) -> None:
    """`types(gguf_name, array)` gives each tensor's type; `vocab(writer)` writes the tokenizer."""
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(path.stem)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_vocab_size(cfg["vocab_size"])
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_file_type(1 if all(types(n, a) == T.F16 for n, a in tensors.items() if a.ndim == 2) else 7)
    if vocab is not None:
        vocab(w)
    for name, arr in tensors.items():
        data, raw = stored(arr, types(name, arr))
        w.add_tensor(name, data, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {path.relative_to(ROOT.parents[3])} ({path.stat().st_size} bytes)")


def from_fixture(variant: str):
    d = ROOT / f"tiny-{variant}"
    cfg = json.loads((d / "config.json").read_text())
    cfg.setdefault("rope_theta", (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0))
    hf = load_file(str(d / "model.safetensors"))
    arch = cfg["model_type"]
    arch = "llama" if arch in ("llama", "mistral") else arch
    tensors = {}
    for name, arr in sorted(hf.items()):
        if arch == "llama" and name.endswith("q_proj.weight"):
            arr = permute(arr, cfg["num_attention_heads"])
        if arch == "llama" and name.endswith("k_proj.weight"):
            arr = permute(arr, cfg["num_key_value_heads"])
        tensors[gguf_name(name)] = arr
    return arch, cfg, tensors


def one_type(qtype: T):
    return lambda name, arr: qtype if arr.ndim == 2 else T.F32


def mixed(name: str, arr: np.ndarray) -> T:
    if arr.ndim != 2:
        return T.F32
    return MIXED[name.split(".")[-2]]


# Q1_0 (ggml type 41): 128 weights a block, an f16 scale then 16 bytes of sign bits.
QK1_0 = 128


def q1_0_quantize(x: np.ndarray) -> bytes:
    """ggml's quantize_row_q1_0_ref: scale = mean |x| over the block (as f16); bit j of the
    block (bit j % 8 of byte j / 8) is set where x[j] >= 0."""
    out = bytearray()
    for blk in x.astype(np.float32).reshape(-1, QK1_0):
        d = np.float32(np.abs(blk).sum(dtype=np.float32) / np.float32(QK1_0))
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


def q1_0_model(path: pathlib.Path) -> None:
    rng = np.random.default_rng(41)
    cfg = dict(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=64,
               rms_norm_eps=1e-6, rope_theta=1000000.0)
    h, ff, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    t = {"token_embd.weight": rng.normal(0, 1.0, (cfg["vocab_size"], h)),
         "output_norm.weight": 1 + 0.1 * rng.normal(size=h),
         "output.weight": rng.normal(0, 0.1, (cfg["vocab_size"], h))}
    for i in range(cfg["num_hidden_layers"]):
        p = f"blk.{i}."
        t.update({p + "attn_norm.weight": 1 + 0.1 * rng.normal(size=h),
                  p + "ffn_norm.weight": 1 + 0.1 * rng.normal(size=h),
                  p + "attn_q_norm.weight": 1 + 0.1 * rng.normal(size=hd),
                  p + "attn_k_norm.weight": 1 + 0.1 * rng.normal(size=hd),
                  p + "attn_q.weight": rng.normal(0, 0.1, (nh * hd, h)),
                  p + "attn_k.weight": rng.normal(0, 0.1, (nkv * hd, h)),
                  p + "attn_v.weight": rng.normal(0, 0.1, (nkv * hd, h)),
                  p + "attn_output.weight": rng.normal(0, 0.1, (h, nh * hd)),
                  p + "ffn_gate.weight": rng.normal(0, 0.1, (ff, h)),
                  p + "ffn_up.weight": rng.normal(0, 0.1, (ff, h)),
                  p + "ffn_down.weight": rng.normal(0, 0.1, (h, ff))})
    t = {k: v.astype(np.float32) for k, v in t.items()}
    w = gguf.GGUFWriter(str(path), "qwen3")
    w.add_name(path.stem)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(h)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(ff)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_vocab_size(cfg["vocab_size"])
    for name, arr in t.items():
        if arr.ndim == 2:
            raw = np.frombuffer(q1_0_quantize(arr.reshape(-1)), dtype=np.uint8)
            raw = raw.reshape(arr.shape[0], arr.shape[1] // QK1_0 * 18)
            w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=T.Q1_0)
        else:
            w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {path.relative_to(ROOT.parents[3])} ({path.stat().st_size} bytes)")


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
    (tokenizer.json, tokenizer_config.json), in folder `d` beside the checkpoint's config.json."""
    import sentencepiece as spm
    import transformers
    corpus = d / "corpus.txt"
    corpus.write_text(CORPUS * 3)
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(d / "tokenizer"), vocab_size=512, model_type="bpe",
        byte_fallback=True, character_coverage=1.0, split_digits=True, add_dummy_prefix=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False, num_threads=1, minloglevel=2)
    shutil.copy(cfg_dir / "config.json", d / "config.json")
    transformers.LlamaTokenizer.from_pretrained(str(d)).save_pretrained(str(d))


def spm_vocab(d: pathlib.Path, n_vocab: int):
    """convert_hf_to_gguf.py's `_set_vocab_sentencepiece` for the tokenizer in `d`."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=str(d / "tokenizer.model"))
    assert sp.vocab_size() == n_vocab, (sp.vocab_size(), n_vocab)
    tokens, scores, types = [], [], []
    for i in range(n_vocab):
        kind = gguf.TokenType.NORMAL
        if sp.IsUnknown(i):
            kind = gguf.TokenType.UNKNOWN
        elif sp.IsControl(i):
            kind = gguf.TokenType.CONTROL
        elif sp.IsUnused(i):
            kind = gguf.TokenType.UNUSED
        elif sp.IsByte(i):
            kind = gguf.TokenType.BYTE
        tokens.append(sp.IdToPiece(i).encode("utf-8"))
        scores.append(sp.GetScore(i))
        types.append(kind)

    def add(w: gguf.GGUFWriter) -> None:
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        gguf.SpecialVocab(d, n_vocab=n_vocab).add_to_gguf(w, quiet=True)
    return add


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


def bpe_vocab(d: pathlib.Path, n_vocab: int, chat_template: bool):
    """convert_hf_to_gguf.py's `_set_vocab_gpt2` (get_vocab_base) for the tokenizer in `d`."""
    import transformers
    tk = transformers.AutoTokenizer.from_pretrained(str(d))
    reverse = {i: t for t, i in tk.get_vocab().items()}
    added = tk.get_added_vocab()
    tokens, types = [], []
    for i in range(n_vocab):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        elif reverse[i] in added:
            special = tk.added_tokens_decoder[i].special
            tokens.append(reverse[i])
            types.append(gguf.TokenType.CONTROL if special else gguf.TokenType.USER_DEFINED)
        else:
            tokens.append(reverse[i])
            types.append(gguf.TokenType.NORMAL)

    def add(w: gguf.GGUFWriter) -> None:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("qwen2")
        w.add_token_list(tokens)
        w.add_token_types(types)
        special = gguf.SpecialVocab(d, load_merges=True)
        if not chat_template:
            special.chat_template = None
        special.add_to_gguf(w, quiet=True)
    return add


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as spm_dir, tempfile.TemporaryDirectory() as bpe_dir:
        spm_dir, bpe_dir = pathlib.Path(spm_dir), pathlib.Path(bpe_dir)
        spm_tokenizer(spm_dir, ROOT / "tiny-llama")
        shutil.copy(spm_dir / "tokenizer.json", OUT / "tiny-llama-tokenizer.json")
        bpe_tokenizer(bpe_dir, ROOT / "tiny-qwen3")
        shutil.copy(bpe_dir / "tokenizer.json", OUT / "tiny-qwen-tokenizer.json")
        arch, cfg, t = from_fixture("llama")
        llama_vocab = spm_vocab(spm_dir, cfg["vocab_size"])
        write(OUT / "tiny-llama-q8_0.gguf", arch, cfg, t, one_type(T.Q8_0), llama_vocab)
        write(OUT / "tiny-llama-q4_0.gguf", arch, cfg, t, one_type(T.Q4_0), llama_vocab)
        write(OUT / "tiny-llama-mixed.gguf", arch, cfg, t, mixed, llama_vocab)
        for variant in ("qwen2", "qwen3"):
            arch, cfg, t = from_fixture(variant)
            vocab = bpe_vocab(bpe_dir, cfg["vocab_size"], chat_template=variant == "qwen3")
            write(OUT / f"tiny-{variant}-mixed.gguf", arch, cfg, t, mixed, vocab)
    q1_0_model(OUT / "tiny-qwen3-q1_0.gguf")
    q1_0_reference(OUT / "q1_0-reference.json")


if __name__ == "__main__":
    main()
