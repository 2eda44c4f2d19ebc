"""A fit's chips come from the spec object with typed values (``FitChips``), not from
``path=value`` text read again as YAML each evaluation: the same chips ``load_arch`` gives
for the values as the overlay writes them, with the command's overrides, a record's
conditions and its clock after, and per-family values under all of them."""

import pytest

from accelsim.validate.calibrate import FITTABLE_PARAMETERS, FitChips
from accelsim.validate.compare import Measurement, chip_for

PARAMETERS = {p.path: p for p in FITTABLE_PARAMETERS}


def _record(**fields) -> Measurement:
    return Measurement(id="r", arch="h100-sxm", family="rmsnorm", implementation="", params={}, latency_s=1e-5,
                       source="", file="m.json", **fields)


def _text(values: dict[str, float]) -> list[str]:
    return [PARAMETERS[path].override(value) for path, value in values.items()]


@pytest.mark.parametrize("record", [
    _record(),
    _record(conditions=("clock=1500 MHz",)),
    _record(ran_at_clock="clock=1700 MHz"),
])
@pytest.mark.parametrize("base", [(), ("hbm.bandwidth=3 TB/s",), ("power.dvfs.boost.enabled=false", "clock=1200 MHz"),
                                  ("power.dvfs.boost.clock=1200 MHz",)])
def test_the_chips_load_arch_gives(record, base):
    values = {"hbm.efficiency": 0.8123456, "launch_overhead": 4.56789e-6, "hbm.latency": 612.345e-9}
    written = {path: PARAMETERS[path].as_written(value) for path, value in values.items()}
    typed = FitChips("h100-sxm", base).chip(record, written)
    assert typed == chip_for(record, "h100-sxm", [*base, *_text(values)], {})


def test_family_values_lie_under_the_fit_and_the_conditions(write_yaml):
    overlay = write_yaml("scoped.yaml", """\
        extends: h100-sxm
        name: scoped
        family_values:
          rmsnorm:
            hbm.efficiency: {value: 0.7, source: test}
            launch_overhead: {value: 9 us, source: test}
        """)
    record = _record(conditions=("clock=1500 MHz",))
    values = {"launch_overhead": PARAMETERS["launch_overhead"].as_written(2.5e-6)}
    typed = FitChips(str(overlay), ()).chip(record, values)
    expected = chip_for(record, str(overlay), ["launch_overhead=2.5 us"], {})
    assert typed == expected
    scoped = typed.for_family("rmsnorm")
    assert (scoped.hbm.efficiency, scoped.launch_overhead_s, scoped.clock_hz) == pytest.approx((0.7, 2.5e-6, 1.5e9))
