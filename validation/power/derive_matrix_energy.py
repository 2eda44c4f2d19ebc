"""The matrix units' energy per flop that makes a reference matmul draw the chip's TDP.

Each chip's bf16 (and, where measured, fp8) ``power.matrix_pj_per_flop`` is an estimate by one
rule: the matmul that sets its ``matrix_unit.efficiency`` (mamf-finder's fastest shape, from the
reference set; on TPUs, where none is published, an 8192^3 matmul at the efficiency the config
gives) runs at the power limit, so over its time ``t`` its energy is ``TDP x t``. Less static
power over ``t`` and the energy of what else it does (its shared-memory, L2 and HBM bytes as
accelsim replays them, at the config's energy per byte), the rest is the matrix units':

    e_matrix = (TDP x t - P_static x t - E_memory) / executed matrix flops

The rule is an assumption (He 2024 saw an A100's bf16 matmuls run at its 400 W limit); it is
not a fit on measured power, and the records that check it are in validation/reference/power/.

The same energy is read, with ``power.dvfs.boost`` on (``docs/power.md``, "The boost clock"), as the
energy per flop at the clock that matmul ran at under the TDP (``boost.matrix_reference_clock``: on
H100 1.525 GHz, from gpu-fryer's tensor-pipe panel), and moved to the boost clock by the DVFS rule's
``V^2``. The memory levels' part of ``TDP x t`` is then counted at this script's clock, not at
the reference clock where the shared memory and L2 bytes cost ``(1.525 / 1.98)^2`` of their energy
at the boost: on the H100 bf16 matmul that understates the matrix energy by about 5% (0.63 pJ at
1.525 GHz against the config's 0.60), so a GEMM as dense throttles a step or two less than it would.

Run: ``python validation/power/derive_matrix_energy.py`` (prints one line per chip and dtype).
"""

from __future__ import annotations

import json
from pathlib import Path

from accelsim.arch.model import load_arch
from accelsim.engine.energy import kernel_activity
from accelsim.families import get_family
from accelsim.families.search import run_config, split_params

REFERENCE = Path(__file__).resolve().parents[1] / "reference"

MAMF = {  # chip: (reference file, record ids)
    "a100-sxm4-80gb": ("a100-sxm4-80gb/gemm.json", ["gemm-bf16-1024x10240x5120--mamf"]),
    "h100-sxm": ("h100-sxm/gemm.json", ["gemm-bf16-2048x2048x13312--mamf", "gemm-fp8-1024x9216x14336--mamf"]),
    "b200": ("b200/gemm.json", ["gemm-bf16-1792x16128x3072--mamf", "gemm-fp8-15360x4096x3072--mamf"]),
}
TPU_SHAPE = {"M": 8192, "N": 8192, "K": 8192, "dtype": "bf16"}
TPUS = ("tpu-v5e", "tpu-v5p", "tpu-v6e")


def derive(chip_name: str, params: dict, seconds: float | None) -> float:
    """pJ per executed matrix flop for this matmul at the chip's TDP (``seconds``: its measured
    time; None: the simulated one)."""
    chip = load_arch(chip_name)
    family = get_family("gemm")
    problem, config, _ = split_params(family, {k: str(v) for k, v in params.items()})
    run = run_config(family, problem, family.resolve_config(problem, config, chip), chip)
    sim = run.sim
    t = seconds if seconds is not None else sim.latency_s
    activity = kernel_activity(run.trace, chip, sim)
    p = chip.power
    memory_j = (activity.local_memory_bytes * p.local_memory_j_per_byte
                + activity.shared_cache_bytes * p.shared_cache_j_per_byte + activity.hbm_bytes * p.hbm_j_per_byte)
    matrix_flops = sum(activity.matrix_flops.values())
    return (p.tdp_w * t - p.static_w * t - memory_j) / matrix_flops * 1e12


def main() -> None:
    for chip, (path, ids) in MAMF.items():
        records = {r["id"]: r for r in json.loads((REFERENCE / path).read_text())["records"]}
        for record_id in ids:
            record = records[record_id]
            params = {k: v for k, v in record["params"].items() if k != "batch"}
            print(f"{chip:16s} {params['dtype']:5s} {derive(chip, params, record['latency_s']):.3f} pJ/flop"
                  f"  ({record_id}, {record['flops'] / record['latency_s'] / 1e12:.1f} TFLOP/s)")
    for chip in TPUS:
        print(f"{chip:16s} bf16  {derive(chip, TPU_SHAPE, None):.3f} pJ/flop  (8192^3 at the config's efficiency)")


if __name__ == "__main__":
    main()
