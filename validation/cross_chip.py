"""Calibrate on one chip's microbenchmarks, predict another's kernels: the what-if error.

    python validation/cross_chip.py [--out validation/reports/cross-chip]

The question a what-if study asks is "we fitted the model on the chip we have; how far
off is it on the chip we are thinking of buying?". Hardware parameters are fitted on
microbenchmark-level records only (``accelsim.validate.levels``: STREAM-like elementwise
kernels and copies); kernel-level records check, never fit. For each transfer below:

1. runs ``accelsim calibrate`` on the source chip's microbenchmark-level reference records
   (``validation/reference/<source>/``, the files whose records are elementwise or copy), on
   the default calibratable parameters but the matrix efficiencies (no elementwise kernel or copy
   issues a matrix instruction, and on a chip with ``power.dvfs.boost`` a probe of them
   trips the config's "a pipe cannot pass its peak" check), writing the overlay to
   ``<source>-calibrated.yaml`` in the output folder (``arch_configs/calibrated/`` is not
   read or changed);
2. predicts every reference record of each target chip twice: with the target's published
   config as it stands, and with the values that overlay marks ``fitted`` set on it
   (``--set``; parameters the fit left alone keep the target's own values), nothing
   fitted on the target (its kernel-level records and its own microbenchmarks alike);
3. reports the error per target and family of both, in ``report.md`` with a plot.

What transfers is only what the fit touched: dimensionless efficiencies and fixed
overheads. Peak rates, bandwidths, capacities and SM counts stay the target's published
numbers; a transfer therefore tests whether "how far below its peaks the memory system
and launches run" on one chip's microbenchmarks carries over to another chip's kernels.
Records of kernels the families do not model are left out (``EXCLUDE``, as in
docs/accuracy.md).

Deterministic for a given commit (the fit's split is a hash of record ids). Attention
targets are left out of the default run: each causal attention record needs a config
search of seconds on a 2-core machine (``--with-attention`` adds them).
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402

from accelsim.cli.main import main as accelsim  # noqa: E402
from accelsim.errors import InputError  # noqa: E402
from accelsim.files import check_output_dir  # noqa: E402
from accelsim.report.validation import finish_error_plot  # noqa: E402
from accelsim.validate.calibrate import BOOST_REFERENCE_CLOCKS, DEFAULT_PARAMETERS  # noqa: E402
from accelsim.validate.compare import Comparison, Measurement, compare, read_measurements, summarise  # noqa: E402
from accelsim.validate.levels import MICROBENCHMARK_FAMILIES, is_microbenchmark_level  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "validation" / "reference"
EXCLUDE = ("FlashAttention-2", "CUTLASS", "huggingface")
"""Implementations that are not the kernel a family models (docs/accuracy.md)."""


@dataclass(frozen=True)
class Transfer:
    source: str
    targets: tuple[str, ...]
    why: str


FIT = tuple(p.path for p in DEFAULT_PARAMETERS if p.path not in BOOST_REFERENCE_CLOCKS)
"""What the source fit moves: calibrate's default parameters but the matrix efficiencies,
which no microbenchmark-level record exercises."""

TRANSFERS = (
    Transfer("h100-sxm", ("h200-sxm", "h100-pcie", "h100-nvl", "b200"),
             "H100 -> H200 is the same Hopper die with more and faster HBM, H100 SXM -> PCIe the same die with "
             "fewer SMs, HBM2e and 350 W, H100 SXM -> NVL the same die with six HBM3 stacks and 400 W; "
             "H100 -> B200 is a new architecture"),
    Transfer("a100-sxm4-80gb", ("a100-sxm4-40gb", "h100-sxm", "h100-pcie", "h100-nvl"),
             "A100 80GB -> 40GB is the same die with HBM2 in place of HBM2e; A100 -> H100: Ampere to Hopper, "
             "the what-if one generation back (H100 NVL: the same Liger norm benchmark as the A100's)"),
)


def excluded(with_attention: bool) -> list[str]:
    return [*EXCLUDE, *([] if with_attention else ["attention forward"])]


def records(arch: str, with_attention: bool) -> list[Measurement]:
    found = [m for m in read_measurements([REFERENCE / arch]) if m.arch == arch]
    return [m for m in found if (with_attention or m.family != "attention")  # decode records too
            and not any(text in m.implementation for text in excluded(with_attention))]


@dataclass(frozen=True)
class Fitted:
    """What ``accelsim calibrate`` fitted on the source: ``(path, value text, note)`` per parameter."""

    overlay: Path
    values: list[tuple[str, str, str]]

    @property
    def overrides(self) -> list[str]:
        return [f"{path}={value}" for path, value, _ in self.values]


def microbenchmark_files(arch: str) -> list[str]:
    """The source's reference files with microbenchmark-level records (relative paths: the
    overlay names them; keep checkouts out of it). A file mixing levels is refused by calibrate."""
    found = [m for m in read_measurements([REFERENCE / arch]) if m.arch == arch and is_microbenchmark_level(m)]
    return sorted({os.path.relpath(m.file) for m in found})


def calibrate(transfer: Transfer, out: Path) -> Fitted:
    overlay = out / f"{transfer.source}-calibrated.yaml"
    files = microbenchmark_files(transfer.source)
    if not files:
        raise SystemExit(f"{transfer.source} has no microbenchmark-level records ({', '.join(MICROBENCHMARK_FAMILIES)}) "
                         f"in {os.path.relpath(REFERENCE / transfer.source)}: nothing to fit a transfer on")
    excludes = [arg for text in EXCLUDE for arg in ("--exclude", text)]
    fits = [arg for path in FIT for arg in ("--fit", path)]
    code = accelsim(["calibrate", "--arch", transfer.source, "--measurements", *files, *fits, *excludes,
                     "-o", str(overlay)])
    if code != 0:
        raise SystemExit(f"accelsim calibrate failed for {transfer.source}")
    data = yaml.safe_load(overlay.read_text(encoding="utf-8"))
    values = []
    for parameter in DEFAULT_PARAMETERS:
        node = data
        for part in parameter.path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get("basis") == "fitted":
            values.append((parameter.path, str(node["value"]), node.get("note", "")))
    return Fitted(overlay, values)


@dataclass(frozen=True)
class Outcome:
    transfer: Transfer
    fitted: Fitted
    published: list[Comparison]
    transferred: list[Comparison]


def run_transfer(transfer: Transfer, out: Path, with_attention: bool) -> Outcome:
    fitted = calibrate(transfer, out)
    targets = [m for target in transfer.targets for m in records(target, with_attention)]
    return Outcome(transfer, fitted, compare(targets), compare(targets, overrides=fitted.overrides))


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def _remark(note: str) -> str:
    """What calibrate's note says of one value beyond its start and the MAPEs (at a search
    bound, held by the prior), or nothing."""
    return "; ".join(part for part in note.split("; ")[1:] if not part.startswith(("train MAPE", "held-out MAPE")))


def render(outcomes: Sequence[Outcome], elapsed: float, plot: str, with_attention: bool) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "accelsim", "arch_configs"], capture_output=True,
                           text=True, cwd=ROOT).stdout.strip()
    if dirty:
        commit += " plus uncommitted changes to accelsim/ or arch_configs/"
    lines = [
        "# Cross-chip prediction: calibrate on one chip's microbenchmarks, predict another's kernels",
        "",
        f"Generated by `python validation/cross_chip.py` on {datetime.date.today()} at commit `{commit}` "
        f"({elapsed:.0f} s). Records: `validation/reference/` (published measurements, each with its source), "
        f"without {', '.join(EXCLUDE)} (kernels the families do not model)"
        + ("." if with_attention else " and without attention (`--with-attention` adds it; slow)."),
        "",
        "Error = predicted / measured - 1 (negative: predicted faster). **published**: the target's own config as "
        "it stands (nothing fitted). **transferred**: the same config with the source chip's fitted values set on "
        "it, nothing refitted on the target. What is fitted on what: on each source chip, `accelsim calibrate` "
        f"fits {', '.join(f'`{path}`' for path in FIT)} (its default parameters but the matrix efficiencies, which "
        f"no elementwise kernel or copy exercises) on that chip's microbenchmark-level records only "
        f"({', '.join(MICROBENCHMARK_FAMILIES)}: `accelsim.validate.levels`); the kernel-level records (GEMM, norms, "
        "softmax, attention) of the targets are only predicted. Only efficiencies and fixed overheads transfer; "
        "peak rates and bandwidths stay the target's published numbers.",
        "",
    ]
    for outcome in outcomes:
        source, fitted = outcome.transfer.source, outcome.fitted
        summary = "; ".join(part for part in fitted.values[0][2].split("; ")
                            if part.startswith(("train MAPE", "held-out MAPE"))) if fitted.values else ""
        lines += [f"## {source} -> {', '.join(outcome.transfer.targets)}", "", outcome.transfer.why + ".", "",
                  f"`accelsim calibrate` on the {source} microbenchmark-level records "
                  f"({', '.join(f'`{f}`' for f in microbenchmark_files(source))}) wrote "
                  f"[`{fitted.overlay.name}`]({fitted.overlay.name})" + (f" ({summary})." if summary else "."), ""]
        if fitted.values:
            lines += ["| fitted parameter | value | before fitting | the fit's remark |", "| --- | ---: | ---: | --- |"]
            lines += [f"| `{path}` | {value} | {note.split(';')[0].removeprefix('value before fitting ')} | "
                      f"{_remark(note)} |" for path, value, note in fitted.values]
        else:
            lines.append("Nothing moved in the fit: the transfer equals the published config.")
        lines += ["", "| target | family | records | MAPE published | MAPE transferred | mean signed published | "
                      "mean signed transferred |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        key = lambda c: (c.measurement.arch, c.measurement.family)  # noqa: E731
        for before, after in zip(summarise(outcome.published, key), summarise(outcome.transferred, key)):
            lines.append(f"| {before.group[0]} | {before.group[1]} | {before.count} | {before.mape:.1%} | "
                         f"{after.mape:.1%} | {_pct(before.mean_signed)} | {_pct(after.mean_signed)} |")
        lines += ["", "| target record | measured | published | transferred | bound (transferred) |",
                  "| --- | ---: | ---: | ---: | --- |"]
        for before, after in zip(outcome.published, outcome.transferred):
            m = before.measurement
            lines.append(f"| {m.arch} {m.id} | {m.latency_s * 1e6:.1f} us | {before.predicted_s * 1e6:.1f} us "
                         f"({_pct(before.error)}) | {after.predicted_s * 1e6:.1f} us ({_pct(after.error)}) | {after.bound} |")
        lines.append("")
    lines += [f"![error by target and family]({plot})", "",
              "Sources: every record's `source` field in `validation/reference/*/*.json`. What the errors mean: "
              "`docs/accuracy.md`, section \"Cross-chip prediction\".", ""]
    return "\n".join(lines)


def plot(outcomes: Sequence[Outcome], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4))
    labels = []
    for outcome in outcomes:
        groups: dict[str, list[tuple[Comparison, Comparison]]] = {}
        for before, after in zip(outcome.published, outcome.transferred):
            label = f"{outcome.transfer.source}\n-> {before.measurement.arch}\n{before.measurement.family}"
            groups.setdefault(label, []).append((before, after))
        for label, pairs in groups.items():
            x = len(labels)
            labels.append(label)
            ax.scatter([x - 0.12] * len(pairs), [b.error * 100 for b, _ in pairs], color="tab:grey", s=18,
                       label="published" if x == 0 else None)
            ax.scatter([x + 0.12] * len(pairs), [a.error * 100 for _, a in pairs], color="tab:blue", s=18,
                       label="transferred" if x == 0 else None)
    return finish_error_plot(fig, ax, path, labels, fontsize=7)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "validation" / "reports" / "cross-chip"))
    parser.add_argument("--with-attention", action="store_true", help="also attention records (slow: config searches)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        args.out = check_output_dir(args.out, "--out")  # an empty path, a file, an unwritable place: one line
    except InputError as exc:
        parser.error(str(exc))
    outcomes = []
    for transfer in TRANSFERS:
        print(f"{transfer.source} -> {', '.join(transfer.targets)} ...", flush=True)
        outcomes.append(run_transfer(transfer, args.out, args.with_attention))
    image = plot(outcomes, args.out / "error_by_target.png")
    report = args.out / "report.md"
    report.write_text(render(outcomes, time.perf_counter() - started, image.name, args.with_attention), encoding="utf-8")
    print(f"wrote {report} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
