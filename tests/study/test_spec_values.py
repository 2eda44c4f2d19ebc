"""Sweep spec values that used to crash the reader: workload ``vars`` holding a mapping
or a list (four raw pydantic errors), and a NUL byte in any path the spec names."""

import textwrap

import pytest

from accelsim.errors import InputError
from accelsim.study.spec import load_sweep_spec


def _spec(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("value", ["{a: 1}", "[1, 2]"])
def test_vars_values_are_scalars(tmp_path, value):
    path = _spec(tmp_path, f"""\
        base: h100-sxm
        workloads:
          - kernel: gemm
            params: {{M: $m, N: 256, K: 256}}
            vars: {{m: [64, {value}]}}
        """)
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    assert exc.value.line == 5 and exc.value.field == "workloads[0].vars.m[1]"
    assert exc.value.message.startswith("expected a number, text or true/false, got ")


@pytest.mark.parametrize("field, text", [
    ("base", 'base: "h100\\0.yaml"\nworkloads: [{kernel: gemm, params: {M: 64, N: 64, K: 64}}]\n'),
    ("workloads[0].trace", 'base: h100-sxm\nworkloads: [{trace: "a\\0b.json"}]\n'),
    ("workloads[0].system_trace", 'base: dgx-h100\nworkloads: [{system_trace: "a\\0.json"}]\n'),
])
def test_a_nul_byte_in_a_path(tmp_path, field, text):
    with pytest.raises(InputError) as exc:
        load_sweep_spec(_spec(tmp_path, text))
    assert exc.value.field == field and "expected a file path (printable text)" in exc.value.message
