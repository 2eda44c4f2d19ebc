"""Leave one source out: fit on every source but one, check on the one left out.

A held-out split by record hash keeps records of one source on both sides, so a value
fitted on a source's way of timing (its launch gaps, its clocks) looks good on that
source's held-out records and carries to no other. Here each source in turn is left out:
the parameters are fitted on the microbenchmark-level records (:mod:`accelsim.validate.levels`)
of every other source, and the left-out source's records (kernel-level ones included) are
predicted with those values, none of its own records fitted on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accelsim.validate.calibrate import NO_SPLIT, Parameter, fit, prepare
from accelsim.validate.compare import Comparison, Measurement, compare
from accelsim.validate.grouping import source_key
from accelsim.validate.levels import is_microbenchmark_level


@dataclass(frozen=True)
class LeftOutSource:
    """One source's records predicted with values fitted on the others (``overrides``)."""

    source: str
    given: tuple[Comparison, ...]
    """Its records on the config as given."""
    comparisons: tuple[Comparison, ...]
    """Its records with the values fitted without it."""
    train_records: int
    train_sources: tuple[str, ...]
    overrides: tuple[str, ...]

    @property
    def mape_given(self) -> float:
        return _mape(self.given)

    @property
    def mape_fitted(self) -> float:
        return _mape(self.comparisons)

    @property
    def mean_signed_fitted(self) -> float:
        return sum(c.error for c in self.comparisons) / len(self.comparisons)


def leave_one_source_out(records: Sequence[Measurement], arch: str, parameters: Sequence[Parameter],
                         overrides: Sequence[str] = (), jobs: int = 1,
                         progress: Callable[[str], None] | None = None) -> list[LeftOutSource]:
    """For each source of ``records`` (:func:`source_key`, in order): the fit of
    ``parameters`` on ``arch`` over the other sources' microbenchmark-level records (none
    when they have none), and the source's records predicted with and without it. Sources
    whose training sets are the same share one fit."""
    by_source: dict[str, list[Measurement]] = {}
    for m in records:
        by_source.setdefault(source_key(m), []).append(m)
    fits: dict[tuple[str, ...], tuple[str, ...]] = {}
    out = []
    for source in sorted(by_source):
        train = [m for m in records if source_key(m) != source and is_microbenchmark_level(m)]
        key = tuple(m.id for m in train)
        if key not in fits:
            fits[key] = _fitted_overrides(train, arch, parameters, overrides, jobs, progress, source)
        fitted = fits[key]
        mine = by_source[source]
        given = compare(mine, overrides=overrides, jobs=jobs)
        with_fit = compare(mine, overrides=[*overrides, *fitted], jobs=jobs) if fitted else given
        out.append(LeftOutSource(source, tuple(given), tuple(with_fit), len(train),
                                 tuple(sorted({source_key(m) for m in train})), fitted))
    return out


def _fitted_overrides(train: Sequence[Measurement], arch: str, parameters: Sequence[Parameter],
                      overrides: Sequence[str], jobs: int, progress, left_out: str) -> tuple[str, ...]:
    if not train:
        return ()
    if progress is not None:
        progress(f"leaving out {left_out}: fitting on {len(train)} records of the other sources")
    cases = prepare(train, arch, overrides, jobs)
    result = fit(cases, arch, parameters, base_overrides=overrides, jobs=jobs, split=NO_SPLIT, progress=progress)
    return tuple(result.overrides)


def _mape(comparisons: Sequence[Comparison]) -> float:
    return sum(abs(c.error) for c in comparisons) / len(comparisons)
