"""``--set`` values that used to crash the loader: a path below a field an earlier
override gave a plain value, and a YAML alias bomb in a value (config files refuse
aliases; a value does too)."""

import pytest

from accelsim.arch.model import load_arch
from accelsim.errors import InputError


@pytest.mark.parametrize("arch, overrides, parent", [
    ("h100-sxm", ["vector_unit.flops_per_cycle_per_core=3", "vector_unit.flops_per_cycle_per_core.fp32=1"],
     "vector_unit.flops_per_cycle_per_core"),
    ("dgx-h100", ["collectives.protocols=3", "collectives.protocols.ll.efficiency=0.5"], "collectives.protocols"),
])
def test_a_key_below_a_field_set_to_a_plain_value(arch, overrides, parent):
    with pytest.raises(InputError) as exc:
        load_arch(arch, overrides)
    assert f"cannot set below '{parent}', which holds 3" in exc.value.one_line()


def _alias_bomb(levels: int) -> str:
    names = [chr(ord("a") + i) for i in range(levels)]
    layers = ["&a [1,1,1,1,1,1,1,1,1]"] + [f"&{n} [{','.join(['*' + p] * 9)}]" for p, n in zip(names, names[1:])]
    return "[" + ", ".join(layers) + "]"


@pytest.mark.parametrize("levels", [2, 6, 9])
def test_an_alias_in_a_value_is_refused_before_it_expands(cli, levels):
    result = cli("arch", "show", "h100-sxm", "--set", f"clock={_alias_bomb(levels)}")
    assert result.code == 2
    assert result.err.strip() == ("accelsim: error: --set: clock: YAML aliases (*name) are not supported in a "
                                  "value; write the value out")
