"""Writing fixtures as Hugging Face writes them, shared by every lesson's oracle.

An oracle imports this with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from fixture_io import safetensors_bytes, write_atomic, write_json
so that the byte layout is written once: `ol fixtures L7.x --check` compares bytes, and a
fix here reaches every lesson's goldens at once.
"""
import json
import os
import struct

import numpy as np
import torch

# safetensors' dtype names for the torch dtypes a checkpoint or golden holds.
DTYPE_NAMES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64"}


def tensor_bytes(t):
    """(dtype name, little-endian bytes) of one tensor. A numpy array (or anything
    numpy takes) is stored as F32, the goldens' dtype; a torch tensor keeps its own
    dtype (F32, BF16 as its raw 16 bits, I64), as in an HF checkpoint."""
    if not isinstance(t, torch.Tensor):
        return "F32", np.ascontiguousarray(t, dtype="<f4").tobytes()
    if t.dtype not in DTYPE_NAMES:
        raise ValueError("fixture_io.tensor_bytes: dtype %s is not one of %s; convert it "
                         "first (.float(), .to(torch.bfloat16), .long())"
                         % (t.dtype, ", ".join(DTYPE_NAMES.values())))
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return "BF16", t.view(torch.int16).numpy().astype("<i2").tobytes()
    if t.dtype == torch.int64:
        return "I64", t.numpy().astype("<i8").tobytes()
    return "F32", t.numpy().astype("<f4").tobytes()


def safetensors_bytes(tensors):
    """A .safetensors file in HF's layout: an 8-byte little-endian header length, the
    header as compact JSON ("__metadata__" first, {"format": "pt"} as torch's
    save_file writes, then one entry per tensor), padded with spaces to a multiple of
    8 so the data is aligned, then the data in header order. Entries are sorted by
    name: HF's writer also puts wider dtypes first, which is the same order for the
    one-dtype files of a checkpoint; readers take any order, and keeping this one
    keeps the committed fixtures byte for byte."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        dtype, raw = tensor_bytes(tensors[name])
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header = {"__metadata__": {"format": "pt"}, **header}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write_atomic(path, data):
    """Writes bytes (or a str, as UTF-8) to a temporary name, then renames it: an
    oracle that fails halfway leaves no partial file under the final name."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_json(path, obj):
    """JSON with sorted keys and a final newline, so a rerun gives the same bytes."""
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")
