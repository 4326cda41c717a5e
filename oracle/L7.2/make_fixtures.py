#!/usr/bin/python3
"""Golden data for L7.2 (the gated MLP and the activations HF names).

Run from the repository root:  /usr/bin/python3 oracle/L7.2/make_fixtures.py OUT_DIR
Writes OUT_DIR/L7.2/mlp.safetensors and OUT_DIR/L7.2/mlp.json; the course's
own copy lives in fixtures/ (so OUT_DIR is `fixtures` there).

The oracle. transformers is not installed here, so what the lesson must
match is re-implemented from transformers 5's sources and run in float32
with torch:

  src/transformers/activations.py (ACT2CLS / ACT2FN):
    silu        SiLUActivation:       nn.functional.silu(x)
    swish       nn.SiLU
    gelu        GELUActivation:       nn.functional.gelu(x)              (erf)
    gelu_pytorch_tanh  GELUTanh:      nn.functional.gelu(x, approximate="tanh")
    gelu_new    NewGELUActivation:
                    0.5 * x * (1.0 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3.0))))
    gelu_fast   FastGELUActivation:
                    0.5 * x * (1.0 + tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))
    quick_gelu  QuickGELUActivation:  x * sigmoid(1.702 * x)
    relu        nn.ReLU
    relu2       ReLUSquaredActivation: square(relu(x))
  src/transformers/models/llama/modeling_llama.py, class LlamaMLP:
    gate_proj, up_proj = Linear(H, I, bias=mlp_bias); down_proj = Linear(I, H, bias=mlp_bias)
    forward: down_proj(act_fn(gate_proj(x)) * up_proj(x))
  src/transformers/models/gpt_oss/modeling_gpt_oss.py, GptOssExperts._apply_gate:
    gate, up = gate_up[..., ::2], gate_up[..., 1::2]
    gate = gate.clamp(min=None, max=limit); up = up.clamp(min=-limit, max=limit)
    glu = gate * sigmoid(gate * alpha); return (up + 1) * glu          (alpha 1.702, limit 7)

Reproducible: one seeded generator, one thread, and a writer that sorts
everything, so a rerun gives the same bytes (`ol fixtures L7.2 --check`).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240702
SHAPE = (2, 3, 8)                 # [B, T, H]
INTERMEDIATE = 12                 # I != H, so a width mix-up cannot hide
GATE_SCALE = 2.0                  # gate pre-activations spread over about [-6, 6]
GPT_OSS_SCALE = 5.0               # gate_up values beyond +-7: the clamps act
ALPHA, LIMIT = 1.702, 7.0
# Where the activations are evaluated one by one: zero, tiny values (where
# relative accuracy counts), the tanh/erf forms' largest gaps (about 2.7 to 3),
# and large values where a naive formula overflows (exp(100) is inf in float32).
POINTS = (0.0, 1e-3, -1e-3, 0.5, -0.5, 1.0, -1.0, 2.7, -2.7, 3.0, -3.0,
          20.0, -20.0, 100.0, -100.0)

# Per-test tolerances, read by the course tests and the model-answer tests.
# float32 reductions and libm/Sleef transcendental functions agree to a few
# ulp, not bit for bit (hf-numerics.md). Measured: the reference and the
# three wheats stay within 0.18 of each tolerance (the closest: gelu's erf
# form at x = -3, where 1 + erf(x / sqrt 2) = 0.0027 cancels and torch's own
# value is good to 4e-5 relative; gelu's MLP outputs 0.13; silu 0.10), and
# every mutant that changes a number moves each golden it touches by at
# least 90 tolerances (the erf/tanh swaps s02 and s03 on the gradients; 212
# on the outputs, 465 at the chosen points), most by 1e4 to 1e7.
TOLERANCES = {
    "test_hand_example_gated_product": {"rtol": 1e-6, "atol": 1e-6},
    "test_golden_outputs_match_hf": {"rtol": 1e-5, "atol": 1e-6},
    "test_golden_gradients_match_hf": {"rtol": 1e-4, "atol": 1e-5},
    "test_activation_values_at_chosen_points": {"rtol": 2e-6, "atol": 1e-6},
    "test_activation_gradients_at_chosen_points": {"rtol": 2e-5, "atol": 2e-7},
    "test_activation_formulas_in_double": {"rtol": 1e-5, "atol": 1e-7},
    "test_golden_gpt_oss_swiglu": {"rtol": 1e-5, "atol": 1e-6},
    "test_gated_product_structure": {"rtol": 1e-6, "atol": 1e-6},
    "test_gradcheck_x_and_every_weight": {"max_rel_error": 1e-2},
}

ACTIVATIONS = ("silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new", "gelu_fast",
               "quick_gelu", "relu", "relu2")


class SiLUActivation(torch.nn.Module):
    def forward(self, x):
        return F.silu(x)


class GELUActivation(torch.nn.Module):
    def forward(self, x):
        return F.gelu(x)


class GELUTanh(torch.nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


class NewGELUActivation(torch.nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                           * (x + 0.044715 * torch.pow(x, 3.0))))


class FastGELUActivation(torch.nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


class QuickGELUActivation(torch.nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class ReLUSquaredActivation(torch.nn.Module):
    def forward(self, x):
        return torch.square(F.relu(x))


ACT2CLS = {
    "silu": SiLUActivation, "swish": torch.nn.SiLU, "gelu": GELUActivation,
    "gelu_pytorch_tanh": GELUTanh, "gelu_new": NewGELUActivation,
    "gelu_fast": FastGELUActivation, "quick_gelu": QuickGELUActivation,
    "relu": torch.nn.ReLU, "relu2": ReLUSquaredActivation,
}


class LlamaMLP(torch.nn.Module):
    """transformers 5, models/llama/modeling_llama.py."""

    def __init__(self, hidden_size, intermediate_size, hidden_act, mlp_bias):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=mlp_bias)
        self.up_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=mlp_bias)
        self.down_proj = torch.nn.Linear(intermediate_size, hidden_size, bias=mlp_bias)
        self.act_fn = ACT2CLS[hidden_act]()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def gpt_oss_apply_gate(gate_up, alpha=ALPHA, limit=LIMIT):
    """transformers 5, models/gpt_oss/modeling_gpt_oss.py, GptOssExperts._apply_gate."""
    gate, up = gate_up[..., ::2], gate_up[..., 1::2]
    gate = gate.clamp(min=None, max=limit)
    up = up.clamp(min=-limit, max=limit)
    glu = gate * torch.sigmoid(gate * alpha)
    return (up + 1) * glu


def build(gen):
    """Every tensor of the fixture, by name, as float32 numpy arrays."""
    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32)

    B, T, H = SHAPE
    I = INTERMEDIATE
    x = 1.5 * randn(B, T, H)
    params = {
        "gate_proj.weight": GATE_SCALE * randn(I, H) / H ** 0.5,
        "gate_proj.bias": 0.5 * randn(I),
        "up_proj.weight": randn(I, H) / H ** 0.5,
        "up_proj.bias": 0.5 * randn(I),
        "down_proj.weight": randn(H, I) / I ** 0.5,
        "down_proj.bias": 0.5 * randn(H),
    }
    upstream = randn(B, T, H)
    out = {"x": x, "upstream": upstream}
    out.update({"params." + k: v for k, v in params.items()})

    for act in ACTIVATIONS:
        for bias in (True, False):
            mlp = LlamaMLP(H, I, act, bias)
            with torch.no_grad():
                for name, p in mlp.named_parameters():
                    p.copy_(params[name])
            xg = x.clone().requires_grad_(True)
            y = mlp(xg)
            y.backward(upstream)
            key = "%s.%s" % (act, "bias" if bias else "nobias")
            out[key + ".y"] = y.detach()
            out[key + ".grad_x"] = xg.grad
            for name, p in mlp.named_parameters():
                out[key + ".grad." + name] = p.grad

    # Each activation at the chosen points, and its derivative there.
    pts = torch.tensor(POINTS, dtype=torch.float32)
    out["points.x"] = pts
    for act in ACTIVATIONS:
        xp = pts.clone().requires_grad_(True)
        yp = ACT2CLS[act]()(xp)
        yp.sum().backward()
        out["points.%s.y" % act] = yp.detach()
        out["points.%s.grad" % act] = xp.grad

    # gpt-oss's clamped SwiGLU over an interleaved gate_up [B, T, 2I].
    gate_up = GPT_OSS_SCALE * randn(B, T, 2 * I)
    gu = gate_up.clone().requires_grad_(True)
    h = gpt_oss_apply_gate(gu)
    up_h = randn(*h.shape)
    h.backward(up_h)
    out["gpt_oss.gate_up"] = gate_up
    out["gpt_oss.upstream"] = up_h
    out["gpt_oss.y"] = h.detach()
    out["gpt_oss.grad_gate_up"] = gu.grad
    return {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in out.items()}


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.2/mlp.*)" % argv[0])
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    tensors = build(gen)

    out_dir = os.path.join(argv[1], "L7.2")
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "mlp.safetensors"), safetensors_bytes(tensors))
    meta = {
        "lesson": "L7.2",
        "oracle": "oracle/L7.2/make_fixtures.py",
        "oracle_semantics": "LlamaMLP, ACT2FN's nine activations and GptOssExperts._apply_gate "
                            "re-implemented from transformers 5 (activations.py, "
                            "models/llama/modeling_llama.py, models/gpt_oss/modeling_gpt_oss.py); "
                            "transformers itself not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "shape": list(SHAPE),
        "intermediate": INTERMEDIATE,
        "activations": list(ACTIVATIONS),
        "points": list(POINTS),
        "gpt_oss": {"alpha": ALPHA, "limit": LIMIT},
        "tensors": {
            "x": "input [B, T, H] = 1.5 * randn",
            "params.<proj>.weight, .bias": "the MLP's parameters under HF's names "
                                           "(gate_proj.weight [I, H], ..., down_proj.bias [H])",
            "upstream": "dL/dy for every gradient golden",
            "<act>.<bias|nobias>.y": "LlamaMLP(x) with that hidden_act, with or without mlp_bias",
            "<act>.<bias|nobias>.grad_x": "d sum(y * upstream) / dx",
            "<act>.<bias|nobias>.grad.<proj>.weight|bias": "the same for each parameter",
            "points.x": "the chosen points",
            "points.<act>.y, .grad": "the activation and its derivative at each point",
            "gpt_oss.gate_up": "[B, T, 2I] interleaved gate/up columns, 5 * randn",
            "gpt_oss.y": "_apply_gate(gate_up) [B, T, I]",
            "gpt_oss.upstream, gpt_oss.grad_gate_up": "dL/dh, and d sum(h * upstream) / d gate_up",
        },
        "tolerances": TOLERANCES,
    }
    write_json(os.path.join(out_dir, "mlp.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
