"""Error lines name what a config is in words (``GPU chip``, ``TPU slice``), never a Python
class name such as ``gpuchip``."""

from __future__ import annotations

import pytest

from accelsim.arch.model import Chip, Cluster, Multislice, Node, Torus, kind_name, load_arch


@pytest.mark.parametrize("name, words", [("h100-sxm", "GPU chip"), ("tpu-v5e", "TPU chip"), ("dgx-h100", "node"),
                                         ("h100-ib-cluster", "cluster"), ("tpu-v5e-4x4", "TPU slice")])
def test_each_builtin_kind_in_words(name, words):
    assert kind_name(load_arch(name)) == words


def test_kinds_as_types_too():
    assert [kind_name(k) for k in (Chip, Node, Cluster, Torus, Multislice)] == [
        "chip", "node", "cluster", "TPU slice", "multislice"]


def test_a_system_where_a_chip_is_expected(cli):
    r = cli("simulate", "--arch", "dgx-h100", "--kernel", "gemm")
    assert r.code == 2 and "'dgx-h100' is a node; kernels run on a chip" in r.err
