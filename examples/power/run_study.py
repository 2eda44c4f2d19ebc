"""What-if: the same kernels and the same replayed training step on H100, H200, B200, TPU v5p and
TPU v6e, each at its TDP and all at one common power budget (examples/power/README.md).

Run from the repository root: ``python examples/power/run_study.py > examples/power/results.md``
(deterministic: the same table every run)."""

from __future__ import annotations

from pathlib import Path

from accelsim.arch.model import load_arch
from accelsim.families import get_family
from accelsim.families.search import run_config, split_params
from accelsim.system.replay import replay
from accelsim.system.trace import load_system_trace

ROOT = Path(__file__).resolve().parents[2]
CHIPS = {  # chip: the 8-chip system its step replays on
    "h100-sxm": "dgx-h100-published", "h200-sxm": "dgx-h200-published", "b200": "dgx-b200-published",
    "tpu-v5p": "tpu-v5p-4x4x4", "tpu-v6e": "tpu-v6e-8x8",
}
BUDGET_W = 500.0
KERNELS = {
    "prefill GEMM 8192^3 bf16": {"M": "8192", "N": "8192", "K": "8192"},
    "decode GEMV 32x8192x8192 bf16": {"M": "32", "N": "8192", "K": "8192"},
}
STEP = ROOT / "traces" / "system" / "transformer_step_dp2_tp4.json"


def kernel_row(chip_name: str, cap_w: float, name: str, params: dict[str, str]) -> str:
    chip = load_arch(chip_name, [f'power.cap="{cap_w:g} W"'])
    family = get_family("gemm")
    problem, config, _ = split_params(family, params)
    result = run_config(family, problem, family.resolve_config(problem, config, chip), chip).sim.result()
    clock = result.throttled_clock_hz or chip.clock_hz
    tflops_per_j = result.flops / result.energy_j / 1e12
    return (f"| {chip_name} | {cap_w:g} W | {name} | {result.latency_s * 1e6:.1f} us | {clock / 1e9:.3g} GHz | "
            f"{result.energy_j * 1e3:.2f} mJ | {result.average_power_w:.0f} W | {tflops_per_j:.2f} |")


def step_row(chip_name: str, system_name: str, cap_w: float) -> str:
    system = load_arch(system_name, [f'chip.power.cap="{cap_w:g} W"'])
    step = replay(load_system_trace(STEP), system, base_dir=STEP.parent).result()
    per_chip_w = step.energy_j / step.step_time_s / len(step.devices)
    return (f"| {chip_name} | {cap_w:g} W | training step dp2 x tp4 ({system_name}) | {step.step_time_s * 1e6:.1f} us "
            f"| | {step.energy_j * 1e3:.1f} mJ | {per_chip_w:.0f} W per chip | |")


def main() -> None:
    print("| chip | cap | workload | latency | clock | energy | average power | TFLOP/J |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for chip_name, system_name in CHIPS.items():
        tdp = load_arch(chip_name).power.tdp_w
        for cap in (tdp, BUDGET_W):
            for name, params in KERNELS.items():
                print(kernel_row(chip_name, cap, name, params))
            print(step_row(chip_name, system_name, cap))


if __name__ == "__main__":
    main()
