"""MoE dispatch / combine against DeepEP's published figures (nothing fitted).

    python validation/report_moe.py [--out validation/reports/moe]

Every record of ``validation/collectives/moe.json`` (DeepEP V1's tables on H800 with one
400 Gb/s CX7 NIC per GPU) is simulated with :mod:`accelsim.network.moe` on
``h100-ib-cluster`` made the measured machine: the node count of the run and 8 NVLink
links per GPU (H800's 400 GB/s bidirectional NVLink against H100's 18 links) reaching the
160 GB/s per direction DeepEP states for H800 (:data:`H800`), with the SMs the kernels ran
on (:data:`NORMAL_SMS`; the low-latency kernels' from DeepEP's launch rule). The
predicted figure is computed as DeepEP's test scripts compute theirs (the bytes they
count over the time), so the error is on the same quantity; the low-latency EP 128 and 256
rows run the kernels of their time (:data:`LOW_LATENCY_RDMA_ONLY_EPS`). Writes ``report.md``:
the errors, and where each record's simulated time goes beside the measured time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from accelsim.arch.model import load_arch
from accelsim.network import build_topology
from accelsim.network.moe import MoeResult, Routing, hit_chances, simulate_moe

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "validation" / "collectives" / "moe.json"
H800 = ("node.chip.interconnect.links=8", "node.collectives.link_efficiency=0.8")
"""H800 as ``h100-ib-cluster``'s node with 8 NVLink links per GPU (400 GB/s bidirectional, NVIDIA
H800 SXM5 product brief) reaching 160 of their 200 GB/s per direction: DeepEP's setup ("H800
(~160 GB/s NVLink maximum bandwidth)", docs/legacy.md) and its maintainer's "the actual
achievable bandwidth peaks at approximately 160GB/s" (github.com/deepseek-ai/DeepEP/issues/16,
a benchmark of the links, not of these kernels)."""
GPUS_PER_NODE = 8
NORMAL_SMS = 24
"""SMs the normal kernels ran on when the figures were taken: ``for i in (24, )`` in
tests/test_intranode.py and tests/test_internode.py from the first release (@ ebfe47e) to
tests/legacy/ (@ dd758caf), where the library's default is 20."""
LOW_LATENCY_RDMA_ONLY_EPS = (128, 256)
"""EP sizes whose low-latency figures predate NVLink in those kernels: DeepEP's README update of
2025-06-05 (de8cfca, "low-latency kernels now leverage NVLink as much as possible", #173)
replaced the EP 8 to 64 rows and kept the EP 128 and 256 rows of the first release (@ ebfe47e),
whose kernels put every message through the NICs, the own node's peers included."""


def token_bytes(record: dict) -> float:
    """The bytes DeepEP's tests count per token: FP8 (1 byte per value and a 4-byte scale
    per 128) for dispatch, BF16 for combine; a low-latency dispatch message also carries a
    16-byte header (``num_fp8_bytes`` in tests/legacy/test_low_latency.py)."""
    hidden = record["hidden"]
    if record["kind"] == "combine":
        return hidden * 2
    return hidden * (1 + 4 / 128) + (16 if record["mode"] == "deepep-ll" else 0)


def counted_bytes(record: dict) -> float:
    """The bytes DeepEP's test script divides by the time for the record's metric."""
    routing = routing_of(record)
    rank_hit, node_hit = hit_chances(routing, record["ep"], GPUS_PER_NODE)
    if record["metric"] == "nvl_GBps":  # what a rank receives, its own tokens included
        return routing.tokens * rank_hit * record["ep"] * routing.token_bytes
    if record["metric"] == "rdma_GBps":  # (token, node) pairs sent, the own node included
        return routing.tokens * node_hit * (record["ep"] // GPUS_PER_NODE) * routing.token_bytes
    return routing.tokens * routing.top_k * routing.token_bytes  # messages sent (low-latency)


def routing_of(record: dict) -> Routing:
    return Routing(tokens=record["tokens"], token_bytes=token_bytes(record), top_k=record["top_k"],
                   experts=record["experts"], node_limit=record["node_limit"])


def simulate(record: dict) -> MoeResult:
    """The record's dispatch or combine as the model runs it."""
    ep = record["ep"]
    arch = load_arch("h100-ib-cluster", [f"nodes={max(ep // GPUS_PER_NODE, 1)}", *H800])
    sms = NORMAL_SMS if record["mode"] == "deepep" else None
    hbm = arch.node.chip.hbm
    return simulate_moe(build_topology(arch), record["mode"], routing=routing_of(record), sm_budget=sms,
                        device_sms=arch.node.chip.num_cores, kind=record["kind"],
                        hbm_bytes_per_s=hbm.bandwidth_bytes_per_s * hbm.efficiency,
                        nvlink=record["mode"] != "deepep-ll" or ep not in LOW_LATENCY_RDMA_ONLY_EPS)


def metric(record: dict, seconds: float) -> float:
    """The record's metric for a dispatch or combine that takes ``seconds``."""
    if record["metric"] == "latency_us":
        return seconds * 1e6
    return counted_bytes(record) / seconds / 1e9


def measured_s(record: dict) -> float:
    """The time the record's figure stands for."""
    if record["metric"] == "latency_us":
        return record["value"] * 1e-6
    return counted_bytes(record) / (record["value"] * 1e9)


def error(record: dict, predicted: float) -> float:
    """Predicted / measured - 1 on bandwidth (for a latency, on its inverse)."""
    if record["metric"] == "latency_us":
        return record["value"] / predicted - 1
    return predicted / record["value"] - 1


def render(rows: list[tuple[dict, MoeResult]]) -> str:
    lines = ["# MoE dispatch / combine against DeepEP's published figures", "",
             "Generated by `python validation/report_moe.py`. Records: "
             "[`validation/collectives/moe.json`](../../collectives/moe.json), each with its source; none was fitted. "
             "Error = predicted / measured - 1 on bandwidth (on 1 / time for the low-latency rows: positive is "
             "predicted faster). H800 is `h100-ib-cluster` with 8 NVLink links per GPU reaching 160 GB/s per "
             f"direction (DeepEP's stated setup); normal kernels on {NORMAL_SMS} SMs (DeepEP's test scripts), "
             "low-latency kernels on the SMs DeepEP launches them on (128 of 132 for 256 experts), their receive "
             "phase after the data at H800's HBM bandwidth; the low-latency EP "
             f"{' and '.join(map(str, LOW_LATENCY_RDMA_ONLY_EPS))} rows predate NVLink in those kernels (every "
             "message through the NICs). The normal kernels carry each token's routing beside it.", "",
             "| mode | rows | MAPE | worst |", "| --- | ---: | ---: | ---: |"]
    scored = [(r, metric(r, result.latency_s)) for r, result in rows]
    scored = [(r, predicted, error(r, predicted)) for r, predicted in scored]
    for mode in ("deepep", "deepep-ll"):
        errs = [abs(e) for r, _, e in scored if r["mode"] == mode]
        if errs:
            lines.append(f"| {mode} | {len(errs)} | {sum(errs) / len(errs):.1%} | {max(errs):.1%} |")
    lines += ["", "| record | EP | measured | predicted | error |", "| --- | ---: | ---: | ---: | ---: |"]
    for r, predicted, e in scored:
        unit = "us" if r["metric"] == "latency_us" else "GB/s"
        lines.append(f"| {r['id']} | {r['ep']} | {r['value']:g} {unit} | {predicted:.1f} {unit} | {e:+.1%} |")
    lines += ["", "Where the simulated time goes, in us, each part as it would take alone "
              "(`simulate_moe(...).times`): launch and step latencies, the busiest NVLink link, the busiest NIC, "
              "the slowest stream at what its SMs issue, the low-latency receive pass; the measured time is the "
              "one the record's figure stands for (its counted bytes over its bandwidth).", "",
              "| record | latencies | NVLink | NIC | SM issue | receive | simulated | measured |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r, result in rows:
        t = result.times
        parts = (t.fixed_s, t.nvlink_s, t.network_s, t.issue_s, t.receive_s, result.latency_s, measured_s(r))
        lines.append(f"| {r['id']} | " + " | ".join(f"{seconds * 1e6:.1f}" for seconds in parts) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "validation" / "reports" / "moe")
    args = parser.parse_args(argv)
    records = json.loads(RECORDS.read_text(encoding="utf-8"))["records"]
    rows = [(r, simulate(r)) for r in records]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.md").write_text(render(rows), encoding="utf-8")
    print(f"wrote {args.out / 'report.md'}: {len(rows)} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
