#!/usr/bin/python3
"""Golden .safetensors files for the runtime's reader and writer (L0.6, M09.1).

Run from the repository root:  /usr/bin/python3 oracle/core/make_safetensors_golden.py OUT_DIR
Writes OUT_DIR/core/{st_golden,st_bf16_source,st_bf16_saved,st_f16}.safetensors
and OUT_DIR/core/sharded/;
the course's copy lives in fixtures/ (so OUT_DIR is `fixtures` there).

The oracle. The `safetensors` Python package is not installed here, so
`serialize` below is the Rust library's writer (safetensors/src/tensor.rs,
`prepare` and `Metadata::serialize`) transcribed: tensors sorted by dtype
rank descending (the order of the Rust `Dtype` enum), then by name; offsets
contiguous from 0; compact JSON with "__metadata__" first and each entry's
keys in the order dtype, shape, data_offsets; the header padded with spaces
to a multiple of 8. The values and every dtype conversion come from torch
(c10's round-to-nearest-even for bfloat16, IEEE half for float16).

Files:
  st_golden        one tensor per dtype the runtime has (F32, BF16, I32, I64,
                   BOOL), rank 0 and a zero-sized tensor, names that sort
                   differently by name and by dtype: the writer's order test.
  st_bf16_source   "x", float32 values chosen to exercise rounding (ties both
                   ways, the overflow carry, NaN of both signs, subnormals).
  st_bf16_saved    {"x": x.to(torch.bfloat16)}: what saving st_bf16_source in
                   BF16 must produce, byte for byte (NaN as 0x7FC0: see to_bf16).
  st_f16           "h" (float16 specials and subnormals) and "h_as_f32", torch's
                   exact widening of it.
  sharded/         two shards and model.safetensors.index.json, as transformers
                   lays out a sharded checkpoint (F32 and BF16 tensors).
Deterministic: a seeded generator and sorted output, so a rerun gives the
same bytes.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

SEED = 20240606

# The Rust Dtype enum, in declaration (= increasing alignment) order.
DTYPE_RANK = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16",
              "I32", "U32", "F32", "F64", "I64", "U64"]
TORCH_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16",
                torch.int32: "I32", torch.int64: "I64", torch.bool: "BOOL"}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:          # numpy has no bfloat16: take the bits
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def serialize(tensors, metadata):
    """safetensors' serialize(): returns the file's bytes."""
    items = sorted(tensors.items(),
                   key=lambda kv: (-DTYPE_RANK.index(TORCH_DTYPES[kv[1].dtype]), kv[0]))
    header, data, offset = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, t in items:
        raw = tensor_bytes(t)
        header[name] = {"dtype": TORCH_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32_from_bits(bits):
    return torch.from_numpy(np.array(bits, dtype=np.uint32).view(np.float32).copy())


def to_bf16(x):
    """x.to(torch.bfloat16), except that every NaN becomes 0x7FC0.

    torch 1.13's vectorised CPU cast writes NaN as 0xFFFF while the scalar
    c10::BFloat16 constructor (round_to_nearest_even) writes 0x7FC0; the
    contract (bf16.h, hf-numerics.md section 11) is the scalar rule, so the
    NaN elements are taken from the scalar constructor."""
    y = x.to(torch.bfloat16)
    y[torch.isnan(x)] = torch.tensor(float("nan"), dtype=torch.bfloat16)
    return y


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_safetensors_golden.py OUT_DIR")
    out = os.path.join(sys.argv[1], "core")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    pt = {"format": "pt"}

    golden = {
        "b.weight": torch.randn(2, 3),                      # F32
        "a.bias": torch.randn(3),                           # F32
        "emb": torch.randn(2, 4).to(torch.bfloat16),        # BF16 sorts after I32 and F32
        "a.count": torch.tensor(7, dtype=torch.int32),      # rank 0, I32 after F32
        "z.ids": torch.tensor([3, -1, 2**40, 0]),           # I64 first despite its name
        "empty": torch.zeros(0, 3),                         # zero-sized F32
        "mask": torch.tensor([True, False, True]),          # BOOL last
        "unicode.é": torch.tensor([1.5]),                   # UTF-8 passes unescaped
    }

    ties_and_edges = [
        0x3F808000, 0x3F818000, 0xBF808000, 0xBF818000,   # ties to even, both ways
        0x3F808001, 0x3F817FFF,                           # either side of a tie
        0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0xFF7FFFFF,   # the overflow carry
        0x7F800000, 0xFF800000, 0x00000000, 0x80000000,   # inf, zeros
        0x7FC00000, 0xFFC00001, 0x7F800001,               # NaNs: both signs, signalling
        0x00000001, 0x00008000, 0x00018000, 0x007FFFFF,   # subnormals
    ]
    x = torch.cat([f32_from_bits(ties_and_edges), torch.randn(43) * 10])

    half_bits = [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0xC000, 0x7BFF,
                 0x7C00, 0xFC00, 0x7E00, 0x3555, 0x8001]
    h = torch.from_numpy(np.array(half_bits, dtype=np.uint16).view(np.float16).copy())

    files = {
        "st_golden.safetensors": serialize(golden, pt),
        "st_bf16_source.safetensors": serialize({"x": x}, pt),
        "st_bf16_saved.safetensors": serialize({"x": to_bf16(x)}, pt),
        "st_f16.safetensors": serialize({"h": h, "h_as_f32": h.to(torch.float32)}, pt),
    }
    # A sharded checkpoint as transformers saves one: shards in state-dict
    # order, the index with indent 2 and sorted keys.
    shard1 = {"model.embed_tokens.weight": torch.randn(4, 2), "model.norm.weight": torch.ones(2)}
    shard2 = {"lm_head.weight": torch.randn(4, 2).to(torch.bfloat16)}
    shards = {"model-00001-of-00002.safetensors": shard1, "model-00002-of-00002.safetensors": shard2}
    weight_map = {name: file for file, part in shards.items() for name in part}
    total = sum(len(tensor_bytes(t)) for part in shards.values() for t in part.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    for file, part in shards.items():
        files["sharded/" + file] = serialize(part, pt)
    files["sharded/model.safetensors.index.json"] = (
        json.dumps(index, indent=2, sort_keys=True) + "\n").encode("utf-8")

    os.makedirs(os.path.join(out, "sharded"), exist_ok=True)
    for name, blob in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
