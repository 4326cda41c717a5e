#!/usr/bin/python3
"""Golden data for L7.1 (RMSNorm and the pre-norm residual step).

Run from the repository root:  /usr/bin/python3 oracle/L7.1/make_fixtures.py OUT_DIR
Writes OUT_DIR/L7.1/rmsnorm.safetensors and OUT_DIR/L7.1/rmsnorm.json; the
course's own copy lives in fixtures/ (so OUT_DIR is `fixtures` there).

The oracle. transformers is not installed here, so the two norms are copied
from transformers 5 (src/transformers/models/llama/modeling_llama.py,
class LlamaRMSNorm; src/transformers/models/gemma/modeling_gemma.py, class
GemmaRMSNorm), line for line, and run in float32 with torch:

    Llama:  h = x.to(f32); v = h.pow(2).mean(-1, keepdim=True)
            h = h * torch.rsqrt(v + eps);  y = weight * h.to(input_dtype)
    Gemma:  h = x.float();  h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
            y = (h * (1.0 + weight.float())).type_as(x)

The pre-norm residual step is the first half of LlamaDecoderLayer.forward:
residual = x; h = input_layernorm(x); h = sublayer(h); h = residual + h. Here
the sublayer is a bias-free linear map (nn.functional.linear) standing in for
attention.

Reproducible: one seeded generator, one thread, and a writer that sorts
everything, so a rerun gives the same bytes (`ol fixtures L7.1 --check`).
"""
import os
import sys

import numpy as np
import torch

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240701
SHAPE = (2, 5, 16)               # [B, T, d]
EPSILONS = (1e-5, 1e-6)          # SmolLM2 / Mixtral, and Llama
# Each row (b, t) gets its own scale, so a norm over the wrong axis, or over
# the whole tensor, is far off, and the smallest rows (rms ~1e-4, so mean of
# squares ~1e-8 << eps) only come out right with eps inside the square root.
ROW_SCALES = ((1e-4, 1e-2, 1.0, 10.0, 100.0),
              (100.0, 1e-4, 3.0, 1e-2, 0.5))
ROW_SHIFT = 0.5                  # nonzero row means: LayerNorm's centering shows

# Per-test tolerances, read by the course tests and the model-answer tests.
# float32 reductions agree to a few ulp, not bit for bit (hf-numerics.md).
# Measured: the reference and the wheats stay within 1/30 of each tolerance
# (outputs 2.4e-7, gradients 3e-5 absolute on values up to ~1e3), and every
# mutant that changes an output moves it by more than 7e4 tolerances.
TOLERANCES = {
    "test_hand_example_llama_and_gemma": {"rtol": 0.0, "atol": 1e-6},
    "test_golden_matches_hf": {"rtol": 1e-5, "atol": 1e-6},
    "test_golden_gradients_match_hf": {"rtol": 1e-4, "atol": 1e-4},
    "test_golden_pre_norm_residual": {"rtol": 1e-5, "atol": 1e-5},
    "test_eps_inside_the_square_root": {"rtol": 1e-5, "atol": 1e-7},
    "test_scale_invariance_per_row": {"rtol": 1e-5, "atol": 1e-6},
    "test_init_weight_ones_or_zeros": {"rtol": 1e-6, "atol": 1e-7},
    "test_gradcheck_x_and_weight": {"max_rel_error": 1e-2},
}


class LlamaRMSNorm(torch.nn.Module):
    """transformers 5, models/llama/modeling_llama.py (weight starts at 1)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class GemmaRMSNorm(torch.nn.Module):
    """transformers 5, models/gemma/modeling_gemma.py (weight starts at 0)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


def make_norm(kind, d, eps, weight):
    norm = LlamaRMSNorm(d, eps) if kind == "llama" else GemmaRMSNorm(d, eps)
    with torch.no_grad():
        norm.weight.copy_(weight)
    return norm


def eps_name(eps):
    return "eps%.0e" % eps      # 1e-05 -> "eps1e-05"


def build(gen):
    """Every tensor of the fixture, by name, as float32 numpy arrays."""
    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32)

    B, T, d = SHAPE
    scales = torch.tensor(ROW_SCALES, dtype=torch.float32).reshape(B, T, 1)
    x = (randn(B, T, d) + ROW_SHIFT) * scales
    weights = {"llama": 1.0 + 0.5 * randn(d),   # near Llama's init of 1
               "gemma": 0.5 * randn(d)}         # near Gemma's init of 0
    upstream = randn(B, T, d)                   # dL/dy for the gradient goldens
    sub_w = randn(d, d) / d ** 0.5              # the residual's sublayer

    out = {"x": x, "upstream": upstream, "residual.sublayer_weight": sub_w}
    for kind, w in weights.items():
        out[kind + ".weight"] = w
        for eps in EPSILONS:
            norm = make_norm(kind, d, eps, w)
            xg = x.clone().requires_grad_(True)
            y = norm(xg)
            y.backward(upstream)
            key = "%s.%s" % (kind, eps_name(eps))
            out[key + ".y"] = y.detach()
            out[key + ".grad_x"] = xg.grad
            out[key + ".grad_weight"] = norm.weight.grad

    # The pre-norm residual step with the Llama norm, eps 1e-5.
    with torch.no_grad():
        norm = make_norm("llama", d, 1e-5, weights["llama"])
        out["residual.llama.eps1e-05.y"] = x + torch.nn.functional.linear(norm(x), sub_w)
    return {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in out.items()}


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.1/rmsnorm.*)" % argv[0])
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    tensors = build(gen)

    out_dir = os.path.join(argv[1], "L7.1")
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "rmsnorm.safetensors"), safetensors_bytes(tensors))
    meta = {
        "lesson": "L7.1",
        "oracle": "oracle/L7.1/make_fixtures.py",
        "oracle_semantics": "LlamaRMSNorm and GemmaRMSNorm re-implemented line for line from "
                            "transformers 5 (models/llama/modeling_llama.py, "
                            "models/gemma/modeling_gemma.py); transformers itself not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "shape": list(SHAPE),
        "epsilons": list(EPSILONS),
        "row_scales": [list(r) for r in ROW_SCALES],
        "row_shift": ROW_SHIFT,
        "tensors": {
            "x": "input [B, T, d]: (randn + row_shift) * row_scales[b][t]",
            "llama.weight, gemma.weight": "[d] the norm weights (gemma's is used as 1 + w)",
            "<kind>.<eps>.y": "the norm's output",
            "upstream": "dL/dy used for every gradient golden",
            "<kind>.<eps>.grad_x, .grad_weight": "gradients of sum(y * upstream)",
            "residual.sublayer_weight": "[d, d] a bias-free linear sublayer",
            "residual.llama.eps1e-05.y": "x + linear(LlamaRMSNorm(x), sublayer_weight)",
        },
        "tolerances": TOLERANCES,
    }
    write_json(os.path.join(out_dir, "rmsnorm.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
