#!/usr/bin/env python3
"""Measure our Triton kernels (``kernels/triton/``) through PyTorch on one GPU, over tile configs.

    python3 validation/measure_triton.py --out "$OUT/h200-sxm/triton" --budget-s 90
    TRITON_INTERPRET=1 python3 validation/measure_triton.py --device cpu --quick --out /tmp/triton

``measure_gpu.py`` runs this as its ``triton`` suite (a child process: on the CPU
``TRITON_INTERPRET=1`` must be set before triton is imported). The matmul, flash-attention
forward and backward, softmax and layernorm kernels each run at several tile configs of one shape (so
``accelsim validate`` ranks the configs: Kendall tau) and a few sizes at one config.
Records carry ``config`` in the simulator's vocabulary and an id tag
``--triton-<kernel>-<config>``. Split-KV decode (``decode_attention.py``) runs at several
splits and tile widths of one long and one short sequence and at batch 16.

Correct first: the first call of each case is compared with a float64 CPU reference on
row blocks that depend on no other rows (first, middle, last; the matmul also on three
column blocks; attention on two batch-head slices). The kernels allocate their outputs
(not poisoned); the checked call is the first on fresh random inputs. A case that fails
its check, or does not compile (too much shared memory for a config, say), is skipped
with the reason. Timing and files as ``measure_gpu.py``'s library suite: CUDA events
around each call after a 256 MiB L2 flush, median of the reps.

Needs torch and triton and the repository's ``kernels/`` (never accelsim).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

import torch  # noqa: E402

import measure_gpu as lib  # noqa: E402  (its timer, device and record machinery)
import measurement_format as fmt  # noqa: E402
from measurement_format import FamilyFile  # noqa: E402
from provenance import command_line, now_utc, read_gpu_state, suite_parser  # noqa: E402

STARTED = time.monotonic()
PER_CASE_S = {"gpu": 3.0, "cpu": 3.0}
"""Estimated seconds per case (compiling, checking, timing) for ``--budget-s``."""
REL_TOLERANCE = {"bf16": 1e-2, "fp16": 5e-3}
ATTENTION_REL_TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2}
ATTENTION_BWD_REL_TOLERANCE = {"bf16": 5e-2, "fp16": 2e-2}
"""As ``measure_gpu.py`` allows SDPA's backward: P and dS rounded to the input type feed
three more matmuls."""


@dataclass(frozen=True)
class Case:
    kernel: str
    family: str
    params: dict
    config: dict

    @property
    def tag(self) -> str:
        return fmt.config_tag(f"triton-{self.kernel}", self.config)


def _rows(x: torch.Tensor, rows: list[int]) -> torch.Tensor:
    return x[rows].detach().to("cpu").double()


def _matmul_with(b_layout: str) -> Callable:
    """B row-major [K, N] (``kn``), or the transpose of a row-major [N, K] weight (``nk``:
    K contiguous, as ``nn.Linear`` and inductor's ``mm`` of ``x @ W.T`` hand it to the kernel)."""

    def prepare(p: dict, c: dict, device: lib.Device) -> tuple[lib.Prepared, Callable]:
        from kernels.triton import matmul as mm

        a = lib._randn((p["M"], p["K"]), p["dtype"], device)
        b = lib._randn((p["K"], p["N"]), p["dtype"], device) if b_layout == "kn" else \
            lib._randn((p["N"], p["K"]), p["dtype"], device).t()
        rows, cols = fmt.row_blocks(p["M"], c["block_m"]), fmt.row_blocks(p["N"], c["block_n"])
        config = {k: c[k] for k in ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps")}

        def check(out):
            return lib.rel_error(_rows(out, rows)[:, cols], _rows(a, rows) @ lib._as_double(b)[:, cols])

        if b_layout == "kn":
            name, layout = "Triton matmul (kernels/triton/matmul.py)", "A [M,K] and B [K,N] row-major"
        else:
            name = "Triton matmul (kernels/triton/matmul.py), B = W.T"
            layout = "A [M,K] row-major, B the transpose of a row-major [N,K] weight (K contiguous, nn.Linear's layout)"
        return lib.Prepared(lambda: mm.matmul(a, b, **config), lambda: None, name,
                            f"{layout}, fp32 accumulation, grouped (group_m) program order"), check

    return prepare


def _attention(p: dict, c: dict, device: lib.Device) -> tuple[lib.Prepared, Callable]:
    from kernels.triton import attention as attn

    q = lib._randn((p["batch"], p["heads"], p["seq_q"], p["head_dim"]), p["dtype"], device)
    k = lib._randn((p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    v = lib._randn((p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    config = {key: c[key] for key in ("block_m", "block_n", "num_stages", "num_warps")}
    rows = fmt.row_blocks(p["seq_q"], c["block_m"])
    group = p["heads"] // p["kv_heads"]

    def check(out):
        errors = []
        for bi, hi in {(0, 0), (p["batch"] - 1, p["heads"] - 1)}:
            qs, ks, vs = lib._as_double(q[bi, hi, rows]), lib._as_double(k[bi, hi // group]), lib._as_double(v[bi, hi // group])
            s = qs @ ks.T / math.sqrt(p["head_dim"])
            if p["causal"]:  # the kernel aligns the diagonal bottom-right; measured cases have seq_q == seq_kv
                visible = torch.arange(p["seq_kv"])[None, :] <= torch.tensor(rows)[:, None] + (p["seq_kv"] - p["seq_q"])
                s = s.masked_fill(~visible, float("-inf"))
            errors.append(lib.rel_error(out[0][bi, hi, rows], s.softmax(dim=-1) @ vs))
        return max(errors)

    return lib.Prepared(lambda: attn.attention(q, k, v, causal=p["causal"], **config), lambda: None,
                        "Triton flash attention forward (kernels/triton/attention.py)",
                        "q [B,H,Sq,D], k and v [B,Hkv,Skv,D]; also writes the log-sum-exp [B,H,Sq] in fp32"), check


def _attention_bwd(p: dict, c: dict, device: lib.Device) -> tuple[lib.Prepared, Callable]:
    """The backward kernel alone (as the attention family models it): O, LSE and Delta
    are made once, and each timed call clears the fp32 dQ it accumulates into and
    launches the kernel. The Delta reduction and the dQ cast of a whole backward (about
    5% of it at s=4096, more at short sequences) are not timed; SDPA's backward, in the
    library suite, includes its own."""
    from kernels.triton import attention as attn

    group = p["heads"] // p["kv_heads"]
    q = lib._randn((p["batch"], p["heads"], p["seq_q"], p["head_dim"]), p["dtype"], device)
    k = lib._randn((p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    v = lib._randn((p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    do = lib._randn(tuple(q.shape), p["dtype"], device)
    scores = (q.float() @ k.float().repeat_interleave(group, 1).transpose(-1, -2)) / math.sqrt(p["head_dim"])
    if p["causal"]:
        visible = torch.ones(p["seq_q"], p["seq_kv"], dtype=torch.bool, device=q.device).tril(p["seq_kv"] - p["seq_q"])
        scores = scores.masked_fill(~visible, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    o = (torch.exp(scores - lse[..., None]) @ v.float().repeat_interleave(group, 1)).to(q.dtype)
    scores = None
    config = {key: c[key] for key in ("block_m", "block_n", "num_stages", "num_warps")}
    call = attn.BackwardCall(q, k, v, o, lse, do, causal=p["causal"], **config)
    slices = {(0, 0), (p["batch"] - 1, p["heads"] - 1)}

    def check(out):
        errors = []
        for bi, hi in slices:
            leaves = [lib._as_double(t[bi, h]).requires_grad_() for t, h in ((q, hi), (k, hi // group), (v, hi // group))]
            s = leaves[0] @ leaves[1].T / math.sqrt(p["head_dim"])
            if p["causal"]:
                s = s.masked_fill(~torch.ones(s.shape, dtype=torch.bool).tril(p["seq_kv"] - p["seq_q"]), float("-inf"))
            (s.softmax(-1) @ leaves[2]).backward(lib._as_double(do[bi, hi]))
            # dK and dV are per query head (a KV group sums them after): compare dQ with
            # GQA, all three otherwise
            pairs = [(out[0][bi, hi], leaves[0].grad)]
            if group == 1:
                pairs += [(out[1][bi, hi], leaves[1].grad), (out[2][bi, hi], leaves[2].grad)]
            errors += [lib.rel_error(got, want) for got, want in pairs]
        return max(errors)

    return lib.Prepared(call.launch, lambda: None,
                        "Triton flash attention backward kernel (kernels/triton/attention.py)",
                        "q, dO [B,H,Sq,D], k and v [B,Hkv,Skv,D]; dQ accumulated with fp32 atomics; "
                        "the timed call is clearing dQ (fp32) and the kernel; Delta = rowsum(dO * O) made once "
                        "before, not timed"), check


def _decode(p: dict, c: dict, device: lib.Device) -> tuple[lib.Prepared, Callable]:
    """Split-KV decode (one query token): the split kernel, then with several splits the
    combine kernel, as one call (the attention family's decode trace: two kernels)."""
    from kernels.triton import decode_attention as dec

    q = lib._randn((p["batch"], p["heads"], p["head_dim"]), p["dtype"], device)
    k = lib._randn((p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    v = lib._randn((p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim"]), p["dtype"], device)
    call = dec.DecodeCall(q, k, v, block_m=c["block_m"], block_n=c["block_n"], split_kv=c["split_kv"],
                          num_stages=c["num_stages"], num_warps=c["num_warps"])
    group = p["heads"] // p["kv_heads"]

    def check(out):
        errors = []
        # the first, a middle and the last (batch, query head): a middle KV head and batch too
        for bi, hi in {(0, 0), (p["batch"] // 2, p["heads"] // 2 + group // 2), (p["batch"] - 1, p["heads"] - 1)}:
            hi = min(hi, p["heads"] - 1)
            keys, values = lib._as_double(k[bi, hi // group]), lib._as_double(v[bi, hi // group])
            weights = (keys @ lib._as_double(q[bi, hi]) / math.sqrt(p["head_dim"])).softmax(dim=-1)
            errors.append(lib.rel_error(out[0][bi, hi], weights @ values))
        return max(errors)

    return lib.Prepared(call.launch, lambda: None, "Triton split-KV decode attention (kernels/triton/decode_attention.py)",
                        "q [B,H,D] (one token), k and v [B,Hkv,S,D]; the query heads of a KV group are the rows of "
                        "one block; fp32 partials and a combine kernel when split_kv > 1"), check


def _rowwise(kind: str):
    def prepare(p: dict, c: dict, device: lib.Device) -> tuple[lib.Prepared, Callable]:
        module = __import__(f"kernels.triton.{kind}", fromlist=[kind])
        x = lib._randn((p["rows"], p["cols"]), p["dtype"], device)
        weights = [lib._randn((p["cols"],), p["dtype"], device) for _ in range(ROW_WEIGHTS[kind])]
        rows = fmt.row_blocks(p["rows"], c["block_rows"])
        layout = {"block_rows": c["block_rows"], "num_warps": c["num_warps"]}
        if kind == "softmax":
            run = lambda: module.softmax(x, **layout)  # noqa: E731
            reference = lambda: _rows(x, rows).softmax(dim=-1)  # noqa: E731
        elif kind == "rmsnorm":
            run = lambda: module.rmsnorm(x, *weights, eps=1e-6, **layout)[0]  # noqa: E731
            reference = lambda: (lambda r: r * torch.rsqrt(r.square().mean(-1, keepdim=True) + 1e-6)  # noqa: E731
                                 * lib._as_double(weights[0]))(_rows(x, rows))
        else:
            run = lambda: module.layernorm(x, *weights, eps=1e-5, **layout)[0]  # noqa: E731
            reference = lambda: torch.nn.functional.layer_norm(  # noqa: E731
                _rows(x, rows), (p["cols"],), *(lib._as_double(w) for w in weights), eps=1e-5)
        return (lib.Prepared(run, reference, f"Triton {kind} (kernels/triton/{kind}.py)",
                             "one program per block_rows full rows, statistics in fp32"),
                lambda out: lib.rel_error(out[rows], reference()))

    return prepare


ROW_WEIGHTS = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}
"""Per-column parameter rows each row-wise kernel reads (layernorm's weight and bias)."""

KERNELS: dict[str, tuple[str, Callable]] = {
    "matmul": ("gemm", _matmul_with("kn")),
    "matmul-bt": ("gemm", _matmul_with("nk")),
    "attention": ("attention", _attention),
    "attention-bwd": ("attention", _attention_bwd),
    "decode": ("attention", _decode),
    "softmax": ("softmax", _rowwise("softmax")),
    "layernorm": ("layernorm", _rowwise("layernorm")),
    "rmsnorm": ("rmsnorm", _rowwise("rmsnorm")),
}


def _gemm_cfg(bm, bn, bk, group=8, stages=3, warps=8) -> dict:
    return fmt.gemm_config(bm, bn, bk, group_m=group, num_stages=stages, num_warps=warps)


def _attn_cfg(bm, bn, stages=2, warps=8) -> dict:
    return fmt.attention_config(bm, bn, num_stages=stages, num_warps=warps)


def _decode_cfg(bn, split, stages=2, bm=16) -> dict:
    return fmt.attention_config(bm, bn, num_stages=stages, num_warps=4, split_kv=split)


def decode_cases(scale: str) -> list[Case]:
    """Split-KV decode at configs the model must order: one long batch-1 GQA sequence at
    splits and tile widths around TileOPs' published H200 choices (its 64- vs 128-token tiles
    at 32 splits are 5% apart, which the model ties), a short one (where a call's fixed
    costs dominate), and batched Llama-70B-like decode with and without a combine kernel."""
    if scale.startswith("cpu"):
        small = fmt.attention_params(1, 8, 2, 1, 256, 64, False, "fp16")
        return [Case("decode", "attention", small, _decode_cfg(32, 4))] + (
            [] if scale == "cpu-quick" else [Case("decode", "attention", small, _decode_cfg(64, 1))])
    long = fmt.attention_params(1, 32, 4, 1, 262144, 128, False, "fp16")
    short = fmt.attention_params(1, 32, 4, 1, 4096, 128, False, "fp16")
    batched = fmt.attention_params(16, 64, 8, 1, 4096, 128, False, "fp16")
    return ([Case("decode", "attention", long, _decode_cfg(bn, split, stages)) for bn, split, stages in (
                (64, 32, 2), (128, 32, 2), (64, 64, 2), (64, 16, 2), (32, 32, 2), (64, 32, 3), (128, 16, 2))]
            + [Case("decode", "attention", short, _decode_cfg(bn, split)) for bn, split in ((64, 8), (64, 16), (32, 32))]
            + [Case("decode", "attention", batched, _decode_cfg(64, split)) for split in (1, 2, 4)])


def plan(scale: str) -> list[Case]:
    """The declared sweep: several configs of one shape per kernel, a few sizes at one config.
    The CPU runs fp16: Triton's interpreter computes bf16 dots wrongly (numpy has no bf16)."""
    if scale.startswith("cpu"):
        cases = [Case("matmul", "gemm", {"M": 128, "N": 128, "K": 128, "dtype": "fp16", "batch": 1, "impl": "triton"},
                      _gemm_cfg(64, 64, 64, 2, 2, 4)),
                 Case("matmul-bt", "gemm", {"M": 64, "N": 128, "K": 128, "dtype": "fp16", "batch": 1, "impl": "triton"},
                      _gemm_cfg(64, 64, 32, 2, 2, 4)),
                 Case("attention", "attention", fmt.attention_params(1, 2, 2, 128, 128, 64, True, "fp16"), _attn_cfg(64, 64, 2, 4)),
                 Case("attention-bwd", "attention", fmt.attention_params(1, 2, 2, 128, 128, 64, True, "fp16", "bwd-kernel"),
                      _attn_cfg(32, 64, 2, 4))]
        block_rows = (4,) if scale == "cpu-quick" else (2, 4)
        return cases + decode_cases(scale) + [
            Case(kind, kind, {"rows": 64, "cols": 256, "dtype": "fp16"}, {"block_rows": br, "num_warps": 4})
            for kind in ("softmax", "layernorm", "rmsnorm") for br in block_rows]
    square = {"M": 4096, "N": 4096, "K": 4096, "dtype": "bf16", "batch": 1, "impl": "triton"}
    if scale == "gpu-quick":
        return [Case("matmul", "gemm", square, _gemm_cfg(128, 256, 64)),
                Case("attention", "attention", fmt.fa_setup_params(4096, 128, True), _attn_cfg(128, 64)),
                Case("softmax", "softmax", {"rows": 4096, "cols": 4096, "dtype": "bf16"}, {"block_rows": 1, "num_warps": 8})]
    cases = [Case("matmul", "gemm", square, cfg) for cfg in (
        _gemm_cfg(128, 256, 64), _gemm_cfg(256, 128, 64), _gemm_cfg(128, 128, 64, 8, 4, 4), _gemm_cfg(128, 128, 32, 8, 4, 4),
        _gemm_cfg(64, 128, 64, 8, 4, 4), _gemm_cfg(128, 256, 64, 1), _gemm_cfg(64, 64, 32, 8, 4, 4))]
    cases += [Case("matmul", "gemm", dict(square, M=s, N=s, K=s), _gemm_cfg(128, 256, 64)) for s in (2048, 8192)]
    # A decode-shaped GEMM (M = 128) at the configs PyTorch inductor's autotuner timed for it
    # in a public log whose GPU is not named (docs/accuracy.md, "Config rankings"): there
    # BK = 32 ran a third slower than BK = 64 at the same tile and shallow pipelines up to
    # 1.7x slower than deep ones, which the model does not predict. Inductor hands the
    # kernel B = W.T (K contiguous, `matmul-bt`); B row-major (`matmul`) says whether the
    # layout matters; the BK x num_stages grid at one tile separates a per-iteration cost
    # (grows with K / BK) from a pipelined-load round trip (shrinks with num_stages - 1).
    skinny = {"M": 128, "N": 4096, "K": 4096, "dtype": "fp16", "batch": 1, "impl": "triton"}
    inductor = [_gemm_cfg(64, 64, 128, 8, 5, 4), _gemm_cfg(64, 128, 128, 8, 4, 4), _gemm_cfg(64, 64, 64, 8, 3, 8),
                _gemm_cfg(64, 32, 32, 8, 5, 8)]
    grid = [_gemm_cfg(64, 64, bk, 8, stages, 4) for bk in (32, 64, 128) for stages in (2, 3, 5)]
    cases += [Case("matmul", "gemm", skinny, cfg) for cfg in inductor]
    cases += [Case("matmul-bt", "gemm", skinny, cfg) for cfg in inductor + [g for g in grid if g not in inductor]]
    for causal in (False, True):  # the FlashAttention benchmark setup: 16k tokens, hidden 2048
        cases += [Case("attention", "attention", fmt.fa_setup_params(4096, 128, causal), cfg) for cfg in (
            _attn_cfg(128, 64), _attn_cfg(128, 128), _attn_cfg(64, 64, 3, 4), _attn_cfg(64, 128, 2, 4))]
    cases.append(Case("attention", "attention", fmt.fa_setup_params(4096, 64, False), _attn_cfg(128, 64, 3, 4)))
    for causal in (False, True):  # the backward over the family's config space corners
        cases += [Case("attention-bwd", "attention", fmt.fa_setup_params(4096, 128, causal, pass_="bwd-kernel"), cfg)
                  for cfg in (_attn_cfg(64, 64), _attn_cfg(32, 128), _attn_cfg(32, 64), _attn_cfg(64, 32))]
    cases += decode_cases(scale)  # before the row-wise kernels, whose configs the model predicts nearly equal
    # RMSNorm against LayerNorm at the same rows, bytes per row and launch (Liger's: one row per
    # program, 16 warps): Liger's published runs show RMSNorm slower per byte than LayerNorm
    # at the same bytes per row and warps, by a third on an H100 NVL and an eighth on an A100,
    # which the model does not predict (docs/accuracy.md).
    wide = {"rows": 2048, "cols": 16384, "dtype": "bf16"}
    cases += [Case("rmsnorm", "rmsnorm", wide, {"block_rows": 1, "num_warps": 16}),
              Case("layernorm", "layernorm", wide, {"block_rows": 1, "num_warps": 16}),
              Case("rmsnorm", "rmsnorm", dict(wide, cols=4096), {"block_rows": 1, "num_warps": 8})]
    for kind in ("softmax", "layernorm"):
        cases += [Case(kind, kind, {"rows": 4096, "cols": 4096, "dtype": "bf16"}, {"block_rows": br, "num_warps": w})
                  for br in (1, 2, 4) for w in (4, 8)]
        cases += [Case(kind, kind, {"rows": 4096, "cols": cols, "dtype": "bf16"}, {"block_rows": 1, "num_warps": w})
                  for cols, w in ((1024, 4), (16384, 16))]
    return cases


def run_case(case: Case, index: int, run: lib.Run, files: dict[str, FamilyFile]) -> None:
    file = files[case.family]
    estimate = 1.5 * PER_CASE_S["gpu" if run.device.on_gpu else "cpu"]
    if time.monotonic() + estimate > run.deadline:
        file.skip(case.params, f"time budget: about {estimate:.0f} s needed, "
                  f"{max(0.0, run.deadline - time.monotonic()):.0f} s left", case.tag)
        file.write()
        return
    torch.manual_seed(3000 + index)
    table = REL_TOLERANCE
    if case.family == "attention":
        table = ATTENTION_BWD_REL_TOLERANCE if case.params["pass"] != "fwd" else ATTENTION_REL_TOLERANCE
    check = {"id": fmt.record_id(case.family, case.params, case.tag), "params": case.params, "config": case.config,
             "tolerance": table[case.params["dtype"]]}
    try:
        prepared, compare = KERNELS[case.kernel][1](case.params, case.config, run.device)
        out = prepared.run()
        run.device.sync()
        check["rel_error"] = compare(out)
        check["passed"] = check["rel_error"] <= check["tolerance"]
        file.checks.append(check)
        if not check["passed"]:
            file.skip(case.params, f"correctness check failed (rel error {check['rel_error']:.3g})", case.tag)
        else:
            record = lib.measure_case(case.family, case.params, prepared, run, config=case.config, tag=case.tag)
            file.records.append(record)
            print(f"  {record['id']:<64} {record['latency_s'] * 1e3:9.4f} ms", flush=True)
    except Exception as exc:  # does not compile for this config, out of memory: the sweep goes on
        reason = (f"{type(exc).__name__}: {exc}".splitlines() or ["error"])[0][:300]
        if "passed" not in check:
            file.checks.append(check | {"passed": False, "rel_error": None, "error": reason})
        file.skip(case.params, reason, case.tag)
    finally:
        prepared = out = None
        if run.device.on_gpu:
            torch.cuda.empty_cache()
    file.write()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = suite_parser(__doc__.split("\n\n")[0], "output folder for <family>.json")
    parser.add_argument("--no-kernel-names", action="store_true", help="do not profile one call per case")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    kind = lib.choose_device({"gpu": "cuda"}.get(args.device, args.device), False)
    if kind == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":  # else every case fails: no driver
        print("measure_triton.py: error: on the CPU the kernels run in Triton's interpreter: start with "
              "TRITON_INTERPRET=1 (it must be set before triton is imported)", file=sys.stderr)
        return 2
    scale = ("gpu" if kind == "cuda" else "cpu") + ("-quick" if args.quick else "")
    device = lib.describe_device(kind)
    policy = lib.POLICIES[scale]
    provenance = {
        "date": now_utc(), "command": command_line(argv), "versions": lib.library_versions(device),
        "settings": lib.torch_settings(), "clocks": {"before": read_gpu_state() if device.on_gpu else None},
        "source": "accelsim validation/measure_triton.py",
        "timing": {"method": "cuda-events" if device.on_gpu else "perf_counter", "statistic": "median",
                   "cache_flush_bytes": policy.flush_bytes, "scale": scale},
    }
    cases = plan(scale)
    files = {f: FamilyFile(args.out / f"{f}.json", f, device.info, dict(provenance))
             for f in sorted({c.family for c in cases})}
    deadline = STARTED + args.budget_s - 2.0 if args.budget_s is not None else math.inf
    timer = lib.Timer(device, policy)
    run = lib.Run(device, policy, scale, timer, args.out, deadline, not args.no_kernel_names, provenance,
                  clocks=lib.clock_sampler(device))
    print(f"triton: {device.info['name']} ({scale}), {len(cases)} cases -> {args.out}", flush=True)
    for index, case in enumerate(cases):
        run_case(case, index, run, files)
    print()
    print(f"{'triton family':<14} {'measured':>8} {'skipped':>8}  fastest record")
    for file in files.values():
        file.provenance["clocks"] = file.provenance["clocks"] | {"after": read_gpu_state() if device.on_gpu else None}
        file.write()
        best = min(file.records, key=lambda r: r["latency_s"], default=None)
        shown = f"{best['id']}  {best['latency_s'] * 1e6:.1f} us" if best else "-"
        print(f"{file.family:<14} {len(file.records):>8} {len(file.skipped):>8}  {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
