"""The system replay's errors name the field of its input (``system``, an op of the trace),
never a command-line option; ``accelsim replay`` names the option or the trace file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import accelsim.system
from accelsim.arch.model import load_arch
from accelsim.errors import InputError
from accelsim.system.replay import ReplayOptions, replay
from tests.system.conftest import spmd

STEP = [{"name": "grads", "kind": "all-gather", "bytes": 2**20}]


def test_a_chip_given_for_a_system_is_named_by_its_field():
    with pytest.raises(InputError) as caught:
        replay(spmd(STEP), load_arch("h100-sxm"))
    assert (caught.value.source, caught.value.field) == (None, "system")


def test_an_algorithm_that_does_not_apply_is_named_by_the_op_it_failed_on(dgx):
    with pytest.raises(InputError) as caught:
        replay(spmd(STEP), dgx, options=ReplayOptions(algorithm="tree"))
    assert caught.value.field == "programs[0].ops[0]" and "tree does not do all-gather" in caught.value.message


def test_a_fraction_out_of_range_is_named_by_its_field():
    with pytest.raises(InputError) as caught:
        ReplayOptions(comm_sm_fraction=1.5)
    assert (caught.value.source, caught.value.field) == (None, "comm_sm_fraction")


def test_no_system_module_names_a_command_line_option():
    package = Path(accelsim.system.__file__).parent
    flags = {path.name: re.findall(r'source=f?"--', path.read_text()) for path in package.rglob("*.py")}
    assert {name: found for name, found in flags.items() if found} == {}


@pytest.fixture
def step_file(tmp_path):
    path = tmp_path / "step.json"
    path.write_text(json.dumps({"schema_version": 1, "num_devices": 8,
                                "programs": [{"name": "spmd", "devices": ["0-7"], "ops": STEP}]}))
    return path


def test_the_command_line_names_the_system_option_for_a_chip(cli, step_file):
    result = cli("replay", str(step_file), "--system", "h100-sxm")
    assert result.code == 2 and result.err.startswith("accelsim: error: --system: 'h100-sxm' is not a system"), \
        result.err


def test_the_command_line_names_the_trace_for_an_op_the_algorithm_cannot_run(cli, step_file):
    result = cli("replay", str(step_file), "--system", "dgx-h100", "--algorithm", "tree")
    assert result.code == 2 and result.err.startswith(f"accelsim: error: {step_file}: programs[0].ops[0]: tree "), \
        result.err


def test_the_command_line_names_the_fraction_option(cli, step_file):
    result = cli("replay", str(step_file), "--system", "dgx-h100", "--comm-hbm-fraction", "1")
    assert result.code == 2 and result.err.startswith("accelsim: error: --comm-hbm-fraction: expected a fraction"), \
        result.err
