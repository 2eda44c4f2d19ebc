"""Write ``fsdp_step_<tokens>.json``: one training step of a Llama-3-8B-shaped model, fully sharded
data parallel (FSDP / ZeRO-3) over 256 TPU chips, as a system trace (format v1).

    python examples/ici_allgather/make_fsdp_step.py [--tokens-per-chip 512] [--out FILE]

Model shapes: Llama 3 8B (huggingface.co/meta-llama/Meta-Llama-3-8B, config.json:
hidden_size 4096, intermediate_size 14336, num_hidden_layers 32,
num_attention_heads 32, num_key_value_heads 8, vocab_size 128256; head_dim 128).
Every chip holds 1/256 of every weight and runs ``--tokens-per-chip`` tokens (one
sequence). Per layer, as XLA's FSDP schedule does:

* forward: all-gather the layer's bf16 weights (issued while the previous layer
  computes: ``async`` + ``done``), then QKV, attention, output projection, gate+up
  and down GEMMs (built-in families, simulated by the kernel engine);
* backward (layers in reverse): all-gather the weights again, the data-gradient and
  weight-gradient GEMMs of each projection, the attention backward, then a
  reduce-scatter of the layer's bf16 gradients (``async``; waited for at the end).

The attention backward is the ``attention`` family's TPU backward (``pass: bwd``: our
Pallas dkv and dq kernels). Norms, embeddings, the loss and the optimizer update are
left out (small next to the GEMMs at this size); say so when quoting the step time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

CHIPS = 256
LAYERS, HIDDEN, FFN, HEADS, KV_HEADS, HEAD_DIM = 32, 4096, 14336, 32, 8, 128
BF16 = 2

PROJECTIONS = {  # name: (N, K) of y[tokens, N] = x[tokens, K] @ W[K, N]
    "qkv": ((HEADS + 2 * KV_HEADS) * HEAD_DIM, HIDDEN),
    "o": (HIDDEN, HEADS * HEAD_DIM),
    "gate_up": (2 * FFN, HIDDEN),
    "down": (HIDDEN, FFN),
}
LAYER_WEIGHT_BYTES = sum(n * k for n, k in PROJECTIONS.values()) * BF16


def gemm(name: str, m: int, n: int, k: int, deps: list[str]) -> dict:
    return {"name": name, "kind": "compute", "family": "gemm", "params": {"M": m, "N": n, "K": k, "dtype": "bf16"},
            "deps": deps}


def attention(name: str, tokens: int, deps: list[str], pass_: str = "fwd") -> dict:
    params = {"batch": 1, "heads": HEADS, "kv_heads": KV_HEADS, "seq_q": tokens, "head_dim": HEAD_DIM,
              "causal": True, "pass": pass_}
    return {"name": name, "kind": "compute", "family": "attention", "params": params, "deps": deps}


def layer_forward(i: int, tokens: int, after: str) -> list[dict]:
    n_qkv, k_qkv = PROJECTIONS["qkv"]
    return [
        gemm(f"f{i}.qkv", tokens, n_qkv, k_qkv, [after]),
        attention(f"f{i}.attn", tokens, [f"f{i}.qkv"]),
        gemm(f"f{i}.o", tokens, *PROJECTIONS["o"], [f"f{i}.attn"]),
        gemm(f"f{i}.gate_up", tokens, *PROJECTIONS["gate_up"], [f"f{i}.o"]),
        gemm(f"f{i}.down", tokens, *PROJECTIONS["down"], [f"f{i}.gate_up"]),
    ]


def layer_backward(i: int, tokens: int, after: list[str]) -> list[dict]:
    ops, previous = [], after
    for proj in ("down", "gate_up", "o", "attn", "qkv"):
        if proj == "attn":
            ops.append(attention(f"b{i}.attn", tokens, previous, pass_="bwd"))
            previous = [f"b{i}.attn"]
            continue
        n, k = PROJECTIONS[proj]
        ops.append(gemm(f"b{i}.{proj}.dx", tokens, k, n, previous))  # dX = dY @ W^T
        ops.append(gemm(f"b{i}.{proj}.dw", k, n, tokens, previous))  # dW = X^T @ dY
        previous = [f"b{i}.{proj}.dx"]
    return ops


def step(tokens: int) -> dict:
    ops: list[dict] = [{"name": "ag.f0", "kind": "all-gather", "bytes": LAYER_WEIGHT_BYTES, "async": True}]
    for i in range(LAYERS):
        ops.append({"name": f"ag.f{i}.done", "kind": "done", "start": f"ag.f{i}"})
        prefetch = f"ag.f{i + 1}" if i + 1 < LAYERS else f"ag.b{LAYERS - 1}"
        ops.append({"name": prefetch, "kind": "all-gather", "bytes": LAYER_WEIGHT_BYTES, "async": True})
        ops += layer_forward(i, tokens, f"ag.f{i}.done")
    for i in reversed(range(LAYERS)):
        ops.append({"name": f"ag.b{i}.done", "kind": "done", "start": f"ag.b{i}"})
        if i > 0:
            ops.append({"name": f"ag.b{i - 1}", "kind": "all-gather", "bytes": LAYER_WEIGHT_BYTES, "async": True})
        ops += layer_backward(i, tokens, [f"ag.b{i}.done"])
        grads = [f"b{i}.{p}.dw" for p in PROJECTIONS]
        ops.append({"name": f"rs.b{i}", "kind": "reduce-scatter", "bytes": LAYER_WEIGHT_BYTES, "async": True,
                    "deps": grads})
    ops += [{"name": f"rs.b{i}.done", "kind": "done", "start": f"rs.b{i}"} for i in range(LAYERS)]
    return {
        "schema_version": 1,
        "kind": "system_trace",
        "name": f"llama3-8b fsdp{CHIPS} step, {tokens} tokens per chip",
        "num_devices": CHIPS,
        "programs": [{"name": "spmd", "devices": [f"0-{CHIPS - 1}"], "ops": ops}],
        "metadata": {"generator": "examples/ici_allgather/make_fsdp_step.py", "model": "Llama 3 8B shapes",
                     "sharding": f"FSDP (ZeRO-3) over {CHIPS} chips", "tokens_per_chip": tokens},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens-per-chip", type=int, default=512)
    parser.add_argument("--out", help="default: fsdp_step_<tokens>.json beside this script")
    args = parser.parse_args()
    out = args.out or str(Path(__file__).with_name(f"fsdp_step_{args.tokens_per_chip}.json"))
    Path(out).write_text(json.dumps(step(args.tokens_per_chip), separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
