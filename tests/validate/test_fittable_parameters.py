"""What the schema calls calibratable, ``calibrate --fit`` takes: every field but the
interconnect latency (no kernel waits it; collectives fit with ``calibrate --system``),
each with a reader, bounds around the published values and a value ``--set`` takes."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.arch.schema import calibratable_paths
from accelsim.validate.calibrate import FITTABLE_PARAMETERS, PARAMETER_READERS, written_values


def test_every_calibratable_kernel_field_can_be_fitted():
    assert set(calibratable_paths()) - {p.path for p in FITTABLE_PARAMETERS} == {"interconnect.latency"}


@pytest.mark.parametrize("arch", ["a100-sxm4-80gb", "h100-sxm", "h200-sxm", "b200", "tpu-v5e"])
def test_published_values_lie_inside_the_search_bounds(arch):
    """A fit starts from the values as written (h100-sxm's boost holds its matrix efficiencies
    per cycle at their reference clocks): written back, each gives the chip it was read from."""
    chip = load_arch(arch)
    for p in FITTABLE_PARAMETERS:
        value = written_values(arch, [p]).get(p.path)
        if value and not p.path.startswith("hbm.queueing"):  # queueing: 0 (unset) where published
            assert p.low <= value <= p.high, (arch, p.path, value)
            written_back = load_arch(arch, [p.override(value)])
            assert PARAMETER_READERS[p.path](written_back) == pytest.approx(PARAMETER_READERS[p.path](chip), rel=1e-5)
