"""The network's errors name the field of its input (``algorithm``, ``group``, ...), never a
command-line option: the CLI alone knows which option gave a field, and says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import accelsim.network
from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.network import build_topology, simulate_collective


@pytest.mark.parametrize("args, field", [
    (("bogus", 1024), "kind"),
    (("all-reduce", 1024, "nvls/ll"), "algorithm"),
    (("all-reduce", 1024, "halving-doubling", 6), "algorithm"),
    (("all-reduce", 1024, "auto", 9), "ranks"),
    (("send-recv", 1024, "auto", None, [0, 1, 2]), "group"),
    (("all-reduce", 1024, "auto", None, [0, 0]), "group"),
    (("all-reduce", 0.0), "size_bytes"),
])
def test_a_bad_argument_is_named_by_its_field(ideal_node, args, field):
    with pytest.raises(InputError) as caught:
        simulate_collective(ideal_node(), *args)
    assert (caught.value.source, caught.value.field) == (None, field)


def test_a_chip_given_for_a_system_is_named_by_its_field():
    with pytest.raises(InputError) as caught:
        build_topology(load_arch("h100-sxm"))
    assert (caught.value.source, caught.value.field) == (None, "system")


def test_no_network_module_names_a_command_line_option():
    package = Path(accelsim.network.__file__).parent
    flags = {path.name: re.findall(r'source=f?"--', path.read_text()) for path in package.rglob("*.py")}
    assert {name: found for name, found in flags.items() if found} == {}


@pytest.mark.parametrize("options, says", [
    (("--collective", "bogus", "--bytes", "1MiB"), "--collective: unknown collective 'bogus'"),
    (("--collective", "all-reduce", "--bytes", "1MiB", "--algorithm", "halving-doubling", "--ranks", "6"),
     "--algorithm: halving-doubling needs a power-of-two group"),
    (("--collective", "all-reduce", "--bytes", "1MiB", "--ranks", "9"), "--ranks: ranks must be between 2 and 8"),
    (("--collective", "send-recv", "--bytes", "1MiB", "--group", "0-2"), "--group: send-recv goes from one rank"),
])
def test_the_command_line_names_the_option_that_gave_the_field(cli, options, says):
    result = cli("simulate", "--system", "dgx-h100", *options)
    assert result.code == 2 and result.err.startswith(f"accelsim: error: {says}"), result.err


def test_the_command_line_names_the_system_option_for_a_chip(cli):
    result = cli("simulate", "--system", "h100-sxm", "--collective", "all-reduce", "--bytes", "1MiB")
    assert result.code == 2 and result.err.startswith("accelsim: error: --system: 'h100-sxm' is a chip"), result.err
