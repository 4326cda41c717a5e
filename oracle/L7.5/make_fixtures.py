#!/usr/bin/python3
"""Golden data for L7.5 (GQAttention and the KV cache).

Run from the repository root:  /usr/bin/python3 oracle/L7.5/make_fixtures.py OUT_DIR
Writes OUT_DIR/L7.5/attention.safetensors and OUT_DIR/L7.5/attention.json; the
course's own copy lives in fixtures/ (so OUT_DIR is `fixtures` there).

The oracle. transformers is not installed here, so the attention of
transformers 5 is re-implemented from its source, in float32 and eager mode:

  models/llama/modeling_llama.py   LlamaRotaryEmbedding.forward (default rope:
                                   compute_default_rope_parameters), rotate_half,
                                   apply_rotary_pos_emb, repeat_kv,
                                   eager_attention_forward, LlamaAttention
                                   (attention_bias: q, k, v AND o biased)
  models/qwen2/modeling_qwen2.py   Qwen2Attention (q, k, v biased, o not)
  cache_utils.py                   DynamicLayer.update: cat along the sequence
  masking_utils.py                 causal_mask_function (kv_idx <= q_idx),
                                   padding_mask_function, sdpa_mask / eager_mask:
                                   0 where visible, torch.finfo(float32).min else

    q = q_proj(x).view(B, T, Hq, D).transpose(1, 2)         (k, v likewise, Hkv heads)
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    k, v = cache.update(k, v)                                (when a cache is used)
    w = softmax(q @ repeat_kv(k).T * D**-0.5 + mask, dim=-1, dtype=float32)
    y = o_proj((w @ repeat_kv(v)).transpose(1, 2).reshape(B, T, Hq * D))

Reproducible: one seeded generator, one thread, and a writer that sorts
everything, so a rerun gives the same bytes (`ol fixtures L7.5 --check`).
"""
import os
import sys

import numpy as np
import torch

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240705
B, T, HIDDEN = 2, 6, 16
THETA = 10000.0
# Position ids per row: they need not start at 0 (row 0 continues a stream).
POSITIONS = [[3, 4, 5, 6, 7, 8], [0, 1, 2, 3, 4, 5]]
# head_dim is independent of hidden / n_heads: only mha has Hq * D = hidden.
CASES = {
    "mha": dict(n_heads=2, n_kv_heads=2, head_dim=8, qkv_bias=False, o_bias=False),
    "gqa": dict(n_heads=6, n_kv_heads=2, head_dim=8, qkv_bias=False, o_bias=False),
    "mqa": dict(n_heads=4, n_kv_heads=1, head_dim=8, qkv_bias=False, o_bias=False),
    "qwen2": dict(n_heads=4, n_kv_heads=2, head_dim=8, qkv_bias=True, o_bias=False),
    "llama_bias": dict(n_heads=4, n_kv_heads=2, head_dim=8, qkv_bias=True, o_bias=True),
}
CHUNKS = (3, 1, 2)          # the cached golden: prefill 3, then 1, then 2 tokens
PADDED = 2                  # row 1 of the masked golden is left-padded by 2 tokens
# Weights are drawn N(0, (WEIGHT_GAIN / sqrt(in))^2) so that the attention is
# peaked, not near uniform: a softmax over the wrong axis or a wrong scale then
# moves the outputs by O(0.1).
WEIGHT_GAIN = 2.0

# Per-test tolerances, read by the course tests and the model-answer tests.
# float32 products and softmax sums agree to a few ulp, not bit for bit
# (hf-numerics.md). Measured (see the chapter's note): the reference and the
# wheats stay within 1/10 of each tolerance, and the mutants move the golden
# outputs by hundreds of tolerances or more.
TOLERANCES = {
    "test_hand_example_two_heads_share_a_kv_head": {"rtol": 1e-5, "atol": 1e-5},
    "test_golden_outputs_match_hf": {"rtol": 1e-4, "atol": 1e-5},
    "test_golden_gradients_match_hf": {"rtol": 1e-4, "atol": 1e-4},
    "test_golden_explicit_mask": {"rtol": 1e-4, "atol": 1e-5},
    "test_keys_cached_after_rope": {"rtol": 1e-5, "atol": 1e-6},
    "test_cached_decode_one_token_at_a_time": {"rtol": 1e-4, "atol": 1e-5},
    "test_cached_decode_uneven_chunks": {"rtol": 1e-4, "atol": 1e-5},
    "test_causality_future_inputs_do_not_matter": {"rtol": 0.0, "atol": 1e-6},
    "test_gradcheck_x_and_every_weight": {"max_rel_error": 1e-2},
}


# ---- transformers 5, re-implemented -----------------------------------------

def default_inv_freq(dim, base):
    """modeling_rope_utils.compute_default_rope_parameters (all float32)."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def rotary_cos_sin(inv_freq, position_ids, attention_scaling=1.0):
    """LlamaRotaryEmbedding.forward: position_ids [B, T] -> cos, sin [B, T, D]."""
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_scaling, emb.sin() * attention_scaling


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep,
                                                           slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask[:, :, :, : key_states.shape[-2]]
    attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32)
    attn_output = torch.matmul(attn_weights.to(query.dtype), value_states)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


class DynamicLayer:
    """cache_utils.DynamicLayer: keys and values concatenated along the sequence."""

    def __init__(self):
        self.keys = None
        self.values = None

    def update(self, key_states, value_states):
        if self.keys is None:
            self.keys, self.values = key_states, value_states
        else:
            self.keys = torch.cat([self.keys, key_states], dim=-2)
            self.values = torch.cat([self.values, value_states], dim=-2)
        return self.keys, self.values

    def get_seq_length(self):
        return 0 if self.keys is None else self.keys.shape[-2]


class Attention(torch.nn.Module):
    """LlamaAttention (attention_bias biases all four) / Qwen2Attention (o unbiased)."""

    def __init__(self, hidden, n_heads, n_kv_heads, head_dim, qkv_bias, o_bias):
        super().__init__()
        self.head_dim = head_dim
        self.num_key_value_groups = n_heads // n_kv_heads
        self.scaling = head_dim ** -0.5
        self.q_proj = torch.nn.Linear(hidden, n_heads * head_dim, bias=qkv_bias)
        self.k_proj = torch.nn.Linear(hidden, n_kv_heads * head_dim, bias=qkv_bias)
        self.v_proj = torch.nn.Linear(hidden, n_kv_heads * head_dim, bias=qkv_bias)
        self.o_proj = torch.nn.Linear(n_heads * head_dim, hidden, bias=o_bias)

    def forward(self, hidden_states, position_embeddings, attention_mask, cache=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if cache is not None:
            key_states, value_states = cache.update(key_states, value_states)
        attn_output, _ = eager_attention_forward(self, query_states, key_states, value_states,
                                                 attention_mask, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


def eager_mask(batch, q_len, kv_len, q_offset=0, padding_mask=None):
    """masking_utils: sdpa_mask with causal_mask_function (and the 2D padding
    mask), then eager_mask: 0 where visible, finfo(float32).min elsewhere."""
    q_idx = torch.arange(q_len)[None, None, :, None] + q_offset
    kv_idx = torch.arange(kv_len)[None, None, None, :]
    visible = (kv_idx <= q_idx).expand(batch, 1, q_len, kv_len)
    if padding_mask is not None:
        visible = visible & padding_mask[:, None, None, :kv_len].bool()
    min_dtype = torch.finfo(torch.float32).min
    return torch.where(visible, torch.tensor(0.0), torch.tensor(min_dtype))


# ---- the fixtures -------------------------------------------------------------

def build(gen):
    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32)

    x = randn(B, T, HIDDEN)
    upstream = randn(B, T, HIDDEN)
    positions = torch.tensor(POSITIONS, dtype=torch.int64)
    out = {"x": x, "upstream": upstream, "positions": positions.float()}

    for name, cfg in CASES.items():
        attn = Attention(HIDDEN, **cfg)
        with torch.no_grad():
            for pname, p in attn.named_parameters():
                fan_in = p.shape[1] if p.ndim == 2 else p.shape[0]
                gain = WEIGHT_GAIN if p.ndim == 2 else 0.5
                p.copy_(randn(*p.shape) * gain / fan_in ** 0.5)
        for pname, p in attn.named_parameters():
            out["%s.%s" % (name, pname)] = p.detach().clone()
        inv_freq = default_inv_freq(cfg["head_dim"], THETA)
        cos, sin = rotary_cos_sin(inv_freq, positions)
        mask = eager_mask(B, T, T)

        xg = x.clone().requires_grad_(True)
        y = attn(xg, (cos, sin), mask)
        y.backward(upstream)
        out[name + ".y"] = y.detach()
        out[name + ".grad.x"] = xg.grad
        for pname, p in attn.named_parameters():
            out["%s.grad.%s" % (name, pname)] = p.grad

        if name != "gqa":
            continue
        with torch.no_grad():
            # The keys a cache holds after a prefill: k_proj(x) rotated, [B, Hkv, T, D].
            k = attn.k_proj(x).view(B, T, -1, cfg["head_dim"]).transpose(1, 2)
            _, k_rot = apply_rotary_pos_emb(k, k, cos, sin)
            out["gqa.k_rot"] = k_rot
            # Prefill and decode through a DynamicLayer in uneven chunks.
            cache, parts, start = DynamicLayer(), [], 0
            for n in CHUNKS:
                past = cache.get_seq_length()
                c_cos, c_sin = cos[:, start:start + n], sin[:, start:start + n]
                parts.append(attn(x[:, start:start + n], (c_cos, c_sin),
                                  eager_mask(B, n, past + n, q_offset=past), cache))
                start += n
            out["gqa.chunked.y"] = torch.cat(parts, dim=1)
            # An explicit mask: row 1 is left-padded by PADDED tokens, so its
            # first PADDED queries see nothing (a fully masked row: uniform, no NaN).
            padding = torch.ones(B, T, dtype=torch.int64)
            padding[1, :PADDED] = 0
            explicit = eager_mask(B, T, T, padding_mask=padding)
            out["masked.mask"] = explicit
            out["gqa.masked.y"] = attn(x, (cos, sin), explicit)
    return {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in out.items()}


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.5/attention.*)" % argv[0])
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    tensors = build(gen)

    out_dir = os.path.join(argv[1], "L7.5")
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "attention.safetensors"), safetensors_bytes(tensors))
    meta = {
        "lesson": "L7.5",
        "oracle": "oracle/L7.5/make_fixtures.py",
        "oracle_semantics": "LlamaAttention / Qwen2Attention eager path (eager_attention_forward, "
                            "repeat_kv, apply_rotary_pos_emb, default RoPE), DynamicLayer.update "
                            "and masking_utils' causal/padding eager masks, re-implemented from "
                            "transformers 5 (models/llama/modeling_llama.py, "
                            "models/qwen2/modeling_qwen2.py, cache_utils.py, masking_utils.py); "
                            "transformers itself not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "batch": B, "tokens": T, "hidden": HIDDEN, "rope_theta": THETA,
        "positions": POSITIONS,
        "cases": CASES,
        "chunks": list(CHUNKS),
        "padded_tokens_row_1": PADDED,
        "weight_gain": WEIGHT_GAIN,
        "tensors": {
            "x, upstream": "[B, T, hidden] the input and dL/dy for every gradient golden",
            "positions": "[B, T] position ids (stored as F32; convert to I64)",
            "<case>.<q|k|v|o>_proj.<weight|bias>": "the parameters, HF's names",
            "<case>.y": "the output with the causal mask, positions as above",
            "<case>.grad.x, <case>.grad.<param>": "gradients of sum(y * upstream)",
            "gqa.k_rot": "[B, Hkv, T, D] the keys after RoPE (what a cache holds)",
            "gqa.chunked.y": "the output through a DynamicLayer, prefill and decode in chunks "
                             "of 3, 1, 2 (equal to gqa.y up to rounding)",
            "masked.mask": "[B, 1, T, T] causal mask with row 1 left-padded by 2 tokens",
            "gqa.masked.y": "the output under masked.mask (row 1's first 2 queries see nothing)",
        },
        "tolerances": TOLERANCES,
    }
    write_json(os.path.join(out_dir, "attention.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
