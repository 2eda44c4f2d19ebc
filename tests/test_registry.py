"""The one registry type behind the extension points: names in registration order,
lazy entries imported on first use, one-line errors naming the unknown key and the known
ones, no name registered twice."""

from __future__ import annotations

import sys

import pytest

from accelsim.errors import InputError
from accelsim.registry import Registry


def test_names_keep_their_order_and_items_come_back():
    reg: Registry[int] = Registry("widget")
    reg.register("b", 2)
    assert reg.decorator("a")(1) == 1
    assert list(reg) == ["b", "a"] and len(reg) == 2 and "a" in reg and "c" not in reg
    assert reg.get("a") == 1 and reg["b"] == 2


def test_an_unknown_name_names_itself_and_the_known_ones():
    reg: Registry[int] = Registry("widget")
    reg.register("ring", 1)
    with pytest.raises(InputError) as caught:
        reg.get("rign", source="--widget")
    assert caught.value.one_line() == "--widget: unknown widget 'rign'; expected one of: ring"
    assert reg.unknown("x", also=("auto",)).message == "unknown widget 'x'; expected one of: auto, ring"


def test_a_lazy_entry_is_known_at_once_and_imported_when_asked_for(tmp_path, monkeypatch):
    (tmp_path / "lazy_widget_module.py").write_text("WIDGET = 3\n")
    monkeypatch.syspath_prepend(tmp_path)
    reg: Registry[int] = Registry("widget")
    reg.register_lazy("w", "lazy_widget_module:WIDGET")
    assert "w" in reg and "lazy_widget_module" not in sys.modules
    assert reg.get("w") == 3
    monkeypatch.delitem(sys.modules, "lazy_widget_module")


def test_the_family_registry_imports_no_family():
    import subprocess

    code = ("import sys\nimport accelsim.arch.model\nfrom accelsim.families import FAMILIES\n"
            "print(len(FAMILIES), sorted(m for m in sys.modules if m.startswith('accelsim.families.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split(" ", 1) == ["7", "[]\n"]


@pytest.mark.parametrize("target", ["module", "module:", ":attribute"])
def test_a_lazy_entry_says_where_it_lives(target):
    with pytest.raises(ValueError, match="module:attribute"):
        Registry("widget").register_lazy("w", target)


def test_no_name_is_registered_twice():
    reg: Registry[int] = Registry("widget")
    reg.register("w", 1)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register_lazy("w", "m:a")
    reg.unregister("w")
    assert "w" not in reg
