"""Build the example system trace: one training step of a small transformer, sharded
data-parallel (2) x tensor-parallel (4) over 8 fake XLA:CPU devices.

    python traces/system/make_transformer_step.py [--out DIR] [--system dgx-h100]

Writes ``transformer_step_dp2_tp4.hlo.txt`` (the compiled, scheduled HLO of the step,
``jit(step).lower(...).compile().as_text()``) and ``transformer_step_dp2_tp4.json``
(``accelsim import hlo`` of it) to ``DIR`` (default: this folder).

The model: token embedding, ``LAYERS`` pre-norm decoder layers (causal multi-head
attention and a GELU MLP, Megatron-style: QKV and the first MLP matrix split by columns
over ``tp``, the output projections by rows), a final norm, tied unembedding, softmax
cross-entropy, the gradient, and an Adam update. The layers are stacked and run with
``lax.scan``, so the HLO has a ``while`` loop (forward and backward). Batch is split
over ``dp``; XLA inserts the tensor-parallel all-reduces and the gradient all-reduces.

The HLO comes from XLA:CPU (fake devices): its fusion choices and synchronous
collectives are the CPU backend's, not a GPU's or TPU's; the trace is a realistic
*shape* of a step (ops, sizes, collectives and their groups), not a GPU profile. XLA:CPU
also widens the bf16 activations it all-reduces to f32, so the tensor-parallel
all-reduces move twice the bytes a GPU or TPU compile would (docs/import-hlo.md).
Versions: generated with jax/jaxlib 0.10.2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

HERE = Path(__file__).resolve().parent
STEM = "transformer_step_dp2_tp4"
DP, TP = 2, 4
LAYERS, D_MODEL, HEADS, D_FF, VOCAB = 2, 256, 8, 1024, 2048
BATCH, SEQ = 8, 128
DTYPE = jnp.bfloat16


def param_specs() -> dict[str, P]:
    """Megatron tensor parallelism over ``tp``; layer parameters stacked on axis 0."""
    return {
        "embed": P(None, None),
        "ln1": P(None, None), "ln2": P(None, None), "ln_f": P(None),
        "wqkv": P(None, None, None, "tp", None),  # [L, d, 3, heads, head_dim]
        "wo": P(None, "tp", None, None),  # [L, heads, head_dim, d]
        "w1": P(None, None, "tp"),  # [L, d, d_ff]
        "w2": P(None, "tp", None),  # [L, d_ff, d]
    }


def param_shapes() -> dict[str, tuple[int, ...]]:
    head_dim = D_MODEL // HEADS
    return {
        "embed": (VOCAB, D_MODEL),
        "ln1": (LAYERS, D_MODEL), "ln2": (LAYERS, D_MODEL), "ln_f": (D_MODEL,),
        "wqkv": (LAYERS, D_MODEL, 3, HEADS, head_dim),
        "wo": (LAYERS, HEADS, head_dim, D_MODEL),
        "w1": (LAYERS, D_MODEL, D_FF),
        "w2": (LAYERS, D_FF, D_MODEL),
    }


def rms_norm(x, scale):
    x32 = x.astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)
    return (normed * scale).astype(x.dtype)


def layer(x, p):
    h = rms_norm(x, p["ln1"])
    qkv = jnp.einsum("bsd,dthk->bsthk", h, p["wqkv"])
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    scores = jnp.einsum("bqhk,bshk->bhqs", q, k).astype(jnp.float32) / np.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((x.shape[1], x.shape[1]), bool))
    probs = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1).astype(x.dtype)
    attn = jnp.einsum("bhqs,bshk->bqhk", probs, v)
    x = x + jnp.einsum("bqhk,hkd->bqd", attn, p["wo"])
    h = rms_norm(x, p["ln2"])
    x = x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]
    return x


def loss_fn(params, tokens, targets):
    x = params["embed"][tokens]
    stacked = {k: params[k] for k in ("ln1", "ln2", "wqkv", "wo", "w1", "w2")}
    x, _ = jax.lax.scan(lambda carry, p: (layer(carry, p), None), x, stacked)
    x = rms_norm(x, params["ln_f"])
    logits = jnp.einsum("bsd,vd->bsv", x, params["embed"]).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def train_step(params, opt, tokens, targets):
    """Loss, gradient and an Adam update (lr 1e-3, betas 0.9 / 0.999)."""
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
    step = opt["step"] + 1
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g.astype(jnp.float32), opt["m"], grads)
    v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * jnp.square(g.astype(jnp.float32)), opt["v"], grads)
    bias1, bias2 = 1 - 0.9 ** step, 1 - 0.999 ** step
    params = jax.tree.map(
        lambda w, m, v: (w - 1e-3 * (m / bias1) / (jnp.sqrt(v / bias2) + 1e-8)).astype(w.dtype), params, m, v)
    return params, {"step": step, "m": m, "v": v}, loss


def compiled_hlo() -> str:
    devices = np.array(jax.devices()[:DP * TP]).reshape(DP, TP)
    mesh = Mesh(devices, ("dp", "tp"))
    specs, shapes = param_specs(), param_shapes()

    def abstract(shape, dtype, spec):
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))

    params = {k: abstract(shapes[k], DTYPE, specs[k]) for k in shapes}
    moments = {k: abstract(shapes[k], jnp.float32, specs[k]) for k in shapes}
    opt = {"step": abstract((), jnp.int32, P()), "m": moments, "v": dict(moments)}
    tokens = abstract((BATCH, SEQ), jnp.int32, P("dp", None))
    out_shardings = ({k: NamedSharding(mesh, specs[k]) for k in shapes},
                     {"step": NamedSharding(mesh, P()),
                      "m": {k: NamedSharding(mesh, specs[k]) for k in shapes},
                      "v": {k: NamedSharding(mesh, specs[k]) for k in shapes}},
                     NamedSharding(mesh, P()))
    step = jax.jit(train_step, out_shardings=out_shardings, donate_argnums=(0, 1))
    return step.lower(params, opt, tokens, tokens).compile().as_text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE), help="output folder (default: this script's folder)")
    parser.add_argument("--system", default="dgx-h100", help="system the trace is imported for")
    args = parser.parse_args(argv)
    if len(jax.devices()) < DP * TP:
        print(f"need {DP * TP} devices; set XLA_FLAGS before jax is imported", file=sys.stderr)
        return 1
    out = Path(args.out)
    hlo_path, trace_path = out / f"{STEM}.hlo.txt", out / f"{STEM}.json"
    hlo_path.write_text(compiled_hlo(), encoding="utf-8")

    from accelsim.cli.main import main as accelsim

    code = accelsim(["import", "hlo", str(hlo_path), "--system", args.system, "-o", str(trace_path)])
    print(f"wrote {hlo_path} ({hlo_path.stat().st_size / 1e6:.2f} MB) and {trace_path}")
    return code


if __name__ == "__main__":
    sys.exit(main())
