#!/usr/bin/env python3
"""Writes the tiny tokenizers of the fixture checkpoints into fixtures/tokenizer/.

    python3 oracle/tokenizer/make_tiny_tokenizers.py [OUT_DIR]   (default fixtures/tokenizer)

Two real-format tokenizers, trained here by plain BPE on a small built-in text
(deterministic: ties broken by the pair's text), small enough to read:

tiny-bytelevel/      SmolLM2's pipeline: Digits(individual) + ByteLevel(use_regex)
                     pre-tokenizer, ByteLevel post-processor and decoder, the specials
                     <|endoftext|> <|im_start|> <|im_end|> at ids 0-2, SmolLM2-Instruct's
                     ChatML chat template, generation_config.json eos_token_id 2.
tiny-sentencepiece/  Llama-2 / Mistral's SentencePiece-style BPE as tokenizers >= 0.19
                     writes it: Metaspace(prepend_scheme "first") pre-tokenizer and
                     decoder, byte_fallback with <0x00>..<0xFF>, fuse_unk, <s> added by
                     TemplateProcessing, a <mask> added token with lstrip, Mistral-7B-
                     Instruct-v0.1's [INST] chat template (raise_exception on roles that do
                     not alternate), generation_config.json eos_token_id [2, 0].

The formats follow tokenizers' serialization (tokenizers/src/tokenizer/serialization.rs,
models/bpe/serialization.rs) and transformers' tokenizer_config.json; the L7.9 and
milestone fixture checkpoints copy these folders. tests/tokenizer/compare.c checks the
C runtime against @huggingface/tokenizers on both, as on the real tokenizers.
"""
import json
import os
import re
import sys
from collections import Counter

TEXT = """
The quick brown fox jumps over the lazy dog. A tiny model reads tiny text, and
the tokenizer turns that text into numbers: 0 1 2 3 4 5 6 7 8 9, 42, 2024, 3.14.
Hello, world! Hello again, world. How are you today? I'm fine, thanks; you're kind.
def add(a, b):
    return a + b
The user asks a question and the assistant answers it. The system sets the rules.
Café, naïve, résumé: accents are bytes too. 你好，世界。 Привет, мир! 🙂
<|im_start|>user
What is the capital of France?<|im_end|>
<|im_start|>assistant
The capital of France is Paris.<|im_end|>
""" * 3

SMOL_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}")

MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant "
    "roles are supported!') }}{% endif %}{% endfor %}")


def byte_table():
    """GPT-2's bytes_to_unicode."""
    printable = (list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256)))
    chars, n = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return chars


def train(words, n_merges, initial):
    """Plain BPE on a Counter of words (tuples of symbols): the most frequent
    pair first, ties to the smaller pair text; returns the merges in order."""
    words = Counter({tuple(w): c for w, c in words.items()})
    merges, vocab = [], set(initial)
    for _ in range(n_merges):
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < 2:
            break
        merges.append(best)
        vocab.add(best[0] + best[1])
        merged = Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += c
        words = merged
    return merges


def added(id_, content, special=True, lstrip=False, rstrip=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": not special, "special": special}


def write(folder, tokenizer, config, generation):
    os.makedirs(folder, exist_ok=True)
    for name, value in (("tokenizer.json", tokenizer), ("tokenizer_config.json", config),
                        ("generation_config.json", generation)):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, indent=2)
            f.write("\n")


def byte_level(out):
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    chars = byte_table()
    text = re.sub(r"<\|im_(start|end)\|>", " ", TEXT)
    # training's pre-split: GPT-2's pattern with ASCII classes (Python's re has no \p{L});
    # only which merges are learned depends on it
    pieces = re.findall(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d| ?[^\s\w]+|\s+(?!\S)|\s+",
                        text)
    words = Counter(tuple(chars[b] for b in p.encode("utf-8")) for p in pieces)
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[chars[b]] = len(vocab)
    merges = train(words, 300, vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(i, s) for i, s in enumerate(specials)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }
    config = {
        "add_prefix_space": False, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
        "pad_token": "<|im_end|>", "unk_token": "<|endoftext|>",
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "clean_up_tokenization_spaces": False, "model_max_length": 8192,
        "tokenizer_class": "GPT2Tokenizer", "chat_template": SMOL_TEMPLATE,
        "added_tokens_decoder": {str(i): added(i, s) for i, s in enumerate(specials)},
    }
    generation = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2}
    write(os.path.join(out, "tiny-bytelevel"), tokenizer, config, generation)
    return len(vocab), len(merges)


def sentencepiece(out):
    specials = ["<unk>", "<s>", "</s>"]
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    # characters seen often enough become tokens; the rest fall back to bytes
    text = re.sub(r"<\|im_(start|end)\|>", " ", TEXT).replace("\n", " ")
    counts = Counter(text.replace(" ", "\u2581"))
    for ch, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if c >= 6 and ch not in vocab:
            vocab[ch] = len(vocab)
    words = Counter()
    for w in text.split(" "):
        if w:
            words[tuple("\u2581" + w)] += 1
    words = Counter({tuple(s if s in vocab else "?" for s in w): c for w, c in words.items()})
    merges = [m for m in train(words, 300, vocab) if "?" not in m[0] + m[1]]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    mask = len(vocab)
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(i, s) for i, s in enumerate(specials)] +
                        [added(mask, "<mask>", lstrip=True)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": "first", "split": False},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
                                                      "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    config = {
        "add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "pad_token": None, "legacy": False,
        "clean_up_tokenization_spaces": False, "tokenizer_class": "LlamaTokenizer",
        "chat_template": MISTRAL_TEMPLATE,
        "added_tokens_decoder": {str(a["id"]): a for a in tokenizer["added_tokens"]},
    }
    generation = {"bos_token_id": 1, "eos_token_id": [2, 0]}
    write(os.path.join(out, "tiny-sentencepiece"), tokenizer, config, generation)
    return mask + 1, len(merges)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "fixtures/tokenizer"
    for name, make in (("tiny-bytelevel", byte_level), ("tiny-sentencepiece", sentencepiece)):
        n_vocab, n_merges = make(out)
        print(f"{out}/{name}: {n_vocab} ids, {n_merges} merges")


if __name__ == "__main__":
    main()
