#!/usr/bin/python3
"""Golden data for L7.7 (masks, windows, sinks, the bounded cache, learned sinks).

Run from the repository root:  /usr/bin/python3 oracle/L7.7/make_fixtures.py OUT_DIR
Writes OUT_DIR/L7.7/mask.safetensors and OUT_DIR/L7.7/mask.json.

The oracle. transformers is not installed here, so what L7.7 must match is
re-implemented from transformers 5's source, in float32 and eager mode:

  masking_utils.py               causal_mask_function (kv_idx <= q_idx),
                                 sliding_window_overlay (kv_idx > q_idx - W),
                                 and_masks / or_masks, eager_mask (0 or finfo.min);
                                 plus a sink overlay of our own (kv_idx < S): HF's
                                 masks have no sink tokens
  models/gpt_oss/modeling_gpt_oss.py
                                 eager_attention_forward with learned sinks:
                                 cat([scores, sinks]), subtract the row max, softmax,
                                 drop the sink column; GptOssAttention (q, k, v, o
                                 biased; sinks [Hq]); its rotary (halves, = rotate_half)
  models/llama/modeling_llama.py the attention of the streams (repeat_kv, RoPE)

StreamingLLM (Xiao et al. 2023, "Efficient Streaming Language Models with Attention
Sinks", section 3.2; hf-numerics.md section 6): the cache keeps S sink tokens and
the last W; keys are cached un-rotated and, at every step, rotated at their
index within the cache (0 .. n-1), the query at its own (n - 1). The oracle
recomputes that from scratch for every token of the stream.

Reproducible: one seeded generator, one thread, sorted output.
"""
import json
import os
import sys

import numpy as np
import torch

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240707
HIDDEN, HEAD_DIM, THETA = 16, 8, 10000.0
MIN = torch.finfo(torch.float32).min

# Masks: (name, query cache positions, key cache positions, window, sinks).
# "ring" is what a SinkWindowCache of 2 sinks + a window of 4 holds after 12
# tokens: slots 0, 1 the sinks, slot 2 + (p - 2) mod 4 the token at p.
MASKS = [
    ("causal", list(range(6)), list(range(6)), 0, 0),
    ("window", list(range(4, 10)), list(range(10)), 3, 0),
    ("window_sinks", list(range(4, 10)), list(range(10)), 3, 2),
    ("window1", list(range(3, 6)), list(range(6)), 1, 0),
    ("early_sinks", list(range(4)), list(range(4)), 2, 2),
    ("ring", [11], [0, 1, 10, 11, 8, 9], 4, 2),
    ("ring_chunk", [12, 13], [0, 1, 10, 11, 8, 9, 12, 13], 4, 2),
]
# gpt-oss attention with learned sinks: B, T, heads, kv heads, a window.
SINK_B, SINK_T, SINK_HQ, SINK_HKV, SINK_WINDOW = 2, 6, 4, 2, 3
POSITIONS = [[2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5]]
# The streams: one layer, 14 tokens, 2 sinks and a window of 4 (capacity 6).
STREAM_T, STREAM_SINKS, STREAM_WINDOW = 14, 2, 4
STREAM_HQ, STREAM_HKV = 4, 2
WEIGHT_GAIN = 2.0

TOLERANCES = {
    "test_golden_masks": {"rtol": 0.0, "atol": 0.0},
    "test_hand_example_window_and_sinks": {"rtol": 1e-5, "atol": 1e-6},
    "test_golden_learned_sinks": {"rtol": 1e-4, "atol": 1e-5},
    "test_golden_learned_sinks_gradients": {"rtol": 1e-4, "atol": 1e-4},
    "test_golden_softmax_with_sink": {"rtol": 1e-5, "atol": 1e-7},
    "test_bounded_cache_equals_keep_everything_under_the_mask": {"rtol": 1e-4, "atol": 1e-5},
    "test_streaming_llm_repositions_keys": {"rtol": 1e-4, "atol": 1e-5},
    "test_gradcheck_softmax_with_sink": {"max_rel_error": 1e-2},
}


# ---- masking_utils, re-implemented --------------------------------------------

def causal_mask_function(q_idx, kv_idx):
    return kv_idx <= q_idx


def sliding_window_overlay(window):
    return lambda q_idx, kv_idx: kv_idx > q_idx - window


def sink_overlay(sinks):
    return lambda q_idx, kv_idx: kv_idx < sinks


def and_masks(*fns):
    def mask(q, k):
        result = torch.ones((), dtype=torch.bool)
        for f in fns:
            result = result & f(q, k)
        return result
    return mask


def or_masks(*fns):
    def mask(q, k):
        result = torch.zeros((), dtype=torch.bool)
        for f in fns:
            result = result | f(q, k)
        return result
    return mask


def eager_mask(q_positions, kv_positions, window=0, sinks=0):
    """[T, S] additive float32 mask from cache positions."""
    fn = causal_mask_function
    if window:
        fn = and_masks(causal_mask_function, or_masks(sliding_window_overlay(window),
                                                       sink_overlay(sinks)))
    q = torch.tensor(q_positions)[:, None]
    k = torch.tensor(kv_positions)[None, :]
    return torch.where(fn(q, k), torch.tensor(0.0), torch.tensor(MIN))


# ---- attention, re-implemented -------------------------------------------------

def default_inv_freq(dim, base):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def cos_sin(position_ids):
    """position_ids [B, T] -> cos, sin [B, T, D] (LlamaRotaryEmbedding.forward)."""
    inv = default_inv_freq(HEAD_DIM, THETA)
    freqs = (inv[None, :, None].expand(position_ids.shape[0], -1, 1)
             @ position_ids[:, None, :].float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(x, cos, sin):
    """x [B, H, T, D], cos/sin [B, T, D]."""
    return x * cos.unsqueeze(1) + rotate_half(x) * sin.unsqueeze(1)


def repeat_kv(x, n_rep):
    b, h, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Attention(torch.nn.Module):
    """LlamaAttention / GptOssAttention (sinks=True: gpt-oss's eager path)."""

    def __init__(self, n_heads, n_kv_heads, bias, sinks):
        super().__init__()
        self.groups = n_heads // n_kv_heads
        self.scaling = HEAD_DIM ** -0.5
        if sinks:
            self.sinks = torch.nn.Parameter(torch.empty(n_heads))
        self.q_proj = torch.nn.Linear(HIDDEN, n_heads * HEAD_DIM, bias=bias)
        self.k_proj = torch.nn.Linear(HIDDEN, n_kv_heads * HEAD_DIM, bias=bias)
        self.v_proj = torch.nn.Linear(HIDDEN, n_kv_heads * HEAD_DIM, bias=bias)
        self.o_proj = torch.nn.Linear(n_heads * HEAD_DIM, HIDDEN, bias=bias)
        self.has_sinks = sinks

    def project(self, x):
        shape = (*x.shape[:-1], -1, HEAD_DIM)
        return [p(x).view(shape).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj)]

    def attend(self, q, k, v, mask):
        """gpt-oss's / Llama's eager_attention_forward, then o_proj."""
        k, v = repeat_kv(k, self.groups), repeat_kv(v, self.groups)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling + mask
        if self.has_sinks:
            sinks = self.sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[-2], -1)
            combined = torch.cat([w, sinks], dim=-1)
            combined = combined - combined.max(dim=-1, keepdim=True).values
            probs = torch.nn.functional.softmax(combined, dim=-1, dtype=combined.dtype)
            w = probs[..., :-1]
        else:
            w = torch.nn.functional.softmax(w, dim=-1, dtype=torch.float32)
        out = torch.matmul(w, v).transpose(1, 2)
        return self.o_proj(out.reshape(*out.shape[:2], -1))

    def forward(self, x, position_ids, mask):
        q, k, v = self.project(x)
        cos, sin = cos_sin(position_ids)
        return self.attend(rope(q, cos, sin), rope(k, cos, sin), v, mask)


def init_params(module, randn):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name == "sinks":
                p.copy_(randn(*p.shape))
            else:
                fan_in = p.shape[1] if p.ndim == 2 else p.shape[0]
                p.copy_(randn(*p.shape) * (WEIGHT_GAIN if p.ndim == 2 else 0.5) / fan_in ** 0.5)


def kept(t, sinks, window):
    """The cache positions a StreamingLLM cache holds when token t arrives."""
    return [p for p in range(t + 1) if p < sinks or p > t - window]


# ---- the fixtures ---------------------------------------------------------------

def build(gen):
    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32)

    out = {}
    for name, q, k, w, s in MASKS:
        out["mask.%s" % name] = eager_mask(q, k, w, s)

    # softmax_with_sink on raw scores: one fully masked row, one huge sink.
    scores = randn(2, 4, 3, 5) * 3.0
    scores[1, 2, 0, :] = MIN
    sinks = randn(4)
    sinks[3] = 80.0
    up = randn(2, 4, 3, 5)
    sg, kg = scores.clone().requires_grad_(True), sinks.clone().requires_grad_(True)
    combined = torch.cat([sg, kg.reshape(1, -1, 1, 1).expand(2, -1, 3, -1)], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = torch.nn.functional.softmax(combined, dim=-1)[..., :-1]
    probs.backward(up)
    out.update({"sws.scores": scores, "sws.sinks": sinks, "sws.upstream": up,
                "sws.probs": probs.detach(), "sws.grad.scores": sg.grad,
                "sws.grad.sinks": kg.grad})

    # gpt-oss attention with learned sinks, full and sliding.
    attn = Attention(SINK_HQ, SINK_HKV, bias=True, sinks=True)
    init_params(attn, randn)
    for pname, p in attn.named_parameters():
        out["sinks.%s" % pname] = p.detach().clone()
    x = randn(SINK_B, SINK_T, HIDDEN)
    upstream = randn(SINK_B, SINK_T, HIDDEN)
    positions = torch.tensor(POSITIONS)
    out.update({"sinks.x": x, "sinks.upstream": upstream, "sinks.positions": positions.float()})
    cache_positions = list(range(SINK_T))
    for kind, window in (("full", 0), ("window", SINK_WINDOW)):
        attn.zero_grad()
        xg = x.clone().requires_grad_(True)
        y = attn(xg, positions, eager_mask(cache_positions, cache_positions, window, 0))
        y.backward(upstream)
        out["sinks.%s.y" % kind] = y.detach()
        if kind == "full":
            out["sinks.full.grad.x"] = xg.grad
            for pname, p in attn.named_parameters():
                out["sinks.full.grad.%s" % pname] = p.grad.clone()

    # The streams: one layer (no biases), 14 tokens.
    layer = Attention(STREAM_HQ, STREAM_HKV, bias=False, sinks=False)
    init_params(layer, randn)
    for pname, p in layer.named_parameters():
        out["stream.%s" % pname] = p.detach().clone()
    xs = randn(1, STREAM_T, HIDDEN)
    out["stream.x"] = xs
    with torch.no_grad():
        every = list(range(STREAM_T))
        # Keys at their own positions, the window+sinks mask: what a bounded
        # cache that keeps positions must equal.
        out["stream.keep.y"] = layer(xs, torch.tensor([every]),
                                     eager_mask(every, every, STREAM_WINDOW, STREAM_SINKS))
        # StreamingLLM: every token recomputed over the kept tokens at their
        # index within the cache.
        q_all, k_all, v_all = layer.project(xs)
        rows = []
        for t in range(STREAM_T):
            idx = kept(t, STREAM_SINKS, STREAM_WINDOW)
            n = len(idx)
            cos, sin = cos_sin(torch.arange(n)[None, :])
            k = rope(k_all[:, :, idx], cos, sin)
            q = rope(q_all[:, :, t:t + 1], cos[:, n - 1:n], sin[:, n - 1:n])
            rows.append(layer.attend(q, k, v_all[:, :, idx], torch.zeros(1, n)))
        out["stream.repos.y"] = torch.cat(rows, dim=1)
    return {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in out.items()}


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.7/mask.*)" % argv[0])
    torch.set_num_threads(1)
    tensors = build(torch.Generator().manual_seed(SEED))
    out_dir = os.path.join(argv[1], "L7.7")
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "mask.safetensors"), safetensors_bytes(tensors))
    meta = {
        "lesson": "L7.7",
        "oracle": "oracle/L7.7/make_fixtures.py",
        "oracle_semantics": "masking_utils' causal and sliding-window mask functions and "
                            "eager_mask (plus a sink-token overlay), gpt-oss's eager attention "
                            "with learned sinks and Llama's eager attention, re-implemented from "
                            "transformers 5 (masking_utils.py, models/gpt_oss/modeling_gpt_oss.py,"
                            " models/llama/modeling_llama.py); StreamingLLM recomputed per token; "
                            "transformers itself not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "hidden": HIDDEN, "head_dim": HEAD_DIM, "rope_theta": THETA,
        "masks": {name: {"query_positions": q, "key_positions": k, "window": w, "sink_tokens": s}
                  for name, q, k, w, s in MASKS},
        "learned_sinks": {"batch": SINK_B, "tokens": SINK_T, "n_heads": SINK_HQ,
                          "n_kv_heads": SINK_HKV, "bias": True, "window": SINK_WINDOW,
                          "positions": POSITIONS},
        "stream": {"tokens": STREAM_T, "sink_tokens": STREAM_SINKS, "window": STREAM_WINDOW,
                   "capacity": STREAM_SINKS + STREAM_WINDOW, "n_heads": STREAM_HQ,
                   "n_kv_heads": STREAM_HKV, "bias": False},
        "tensors": {
            "mask.<name>": "[T, S] additive masks of the 'masks' table (0 or float32 min)",
            "sws.scores, sws.sinks, sws.upstream": "[2, 4, 3, 5] scores (row [1, 2, 0] fully "
                                                   "masked), [4] sink logits (head 3: 80), dL/dp",
            "sws.probs, sws.grad.scores, sws.grad.sinks": "gpt-oss's sink softmax and its "
                                                          "gradients",
            "sinks.<param>": "a gpt-oss attention layer (q, k, v, o biased; sinks [4])",
            "sinks.x, sinks.upstream, sinks.positions": "[2, 6, 16] input, dL/dy, [2, 6] position "
                                                        "ids (F32)",
            "sinks.full.y, sinks.window.y": "outputs, causal and with a window of 3",
            "sinks.full.grad.<x|param>": "gradients of sum(y * upstream), causal",
            "stream.<param>, stream.x": "a GQA layer and a stream of 14 tokens [1, 14, 16]",
            "stream.keep.y": "window 4 + 2 sinks mask over every token at its own position",
            "stream.repos.y": "StreamingLLM: each token over the kept tokens rotated at their "
                              "index within the cache",
        },
        "tolerances": TOLERANCES,
    }
    write_json(os.path.join(out_dir, "mask.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
