"""``accelsim arch list / show / diff`` on the built-in configs."""

import json

from accelsim.arch.loader import builtin_names
from tests.conftest import REPO


def test_list_shows_every_config(cli):
    result = cli("arch", "list")
    assert result.code == 0
    for name in builtin_names():
        assert name in result.out


def test_show_h200_json_gives_datasheet_hbm_with_source(cli):
    result = cli("arch", "show", "h200", "--json")
    assert result.code == 0
    info = json.loads(result.out)
    bandwidth = info["config"]["hbm"]["bandwidth"]
    assert bandwidth["value"] == 4.8e12
    assert bandwidth["unit"] == "B/s"
    assert "H200" in bandwidth["source"]


def test_show_text_names_sources(cli):
    result = cli("arch", "show", "h100-sxm")
    assert result.code == 0
    assert "3.35 TB/s" in result.out
    assert "datasheet" in result.out


def test_show_system_includes_its_chip(cli):
    info = json.loads(cli("arch", "show", "dgx-h100", "--json").out)
    assert info["kind"] == "node"
    assert info["based_on"]["name"] == "h100-sxm"


def test_set_reaches_a_systems_chip(cli):
    info = json.loads(cli("arch", "show", "dgx-h100", "--json", "--set", "chip.hbm.bandwidth=8 TB/s").out)
    assert info["based_on"]["config"]["hbm"]["bandwidth"]["value"] == 8e12


def test_diff_lists_changed_fields(cli):
    result = cli("arch", "diff", "h100-sxm", "h200")
    assert result.code == 0
    assert "config.hbm.bandwidth" in result.out
    assert "4.8 TB/s" in result.out
    assert "config.cores.count" not in result.out


def test_diff_json(cli):
    rows = json.loads(cli("arch", "diff", "h100-sxm", "h200", "--json").out)
    fields = {row["field"] for row in rows}
    assert "config.hbm.capacity" in fields


def test_list_shows_the_plain_names_a_user_types(cli):
    rows = {line.split()[0]: line for line in cli("arch", "list").out.splitlines()[2:]}
    assert "= dgx-h100-calibrated:" in rows["dgx-h100"]  # the plain name is the fitted model
    assert "(published figures)" in rows["dgx-h100-published"]
    assert "32 x dgx-h100 (256 chips)" in rows["h100-ib-cluster"]  # a cluster's node as its config names it


def test_the_readme_excerpt_of_arch_list_is_what_it_prints(cli):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("(`accelsim arch list`; abridged):")[1].split("```")[1]
    printed = {" ".join(line.split()) for line in cli("arch", "list").out.splitlines()}
    for line in block.strip().splitlines()[2:]:
        assert " ".join(line.split()) in printed
