"""The drill's dev-reload invariant catches a last save the Agent was never told of, and a
save that does not import reaching an inventory; its saves are what a developer writes."""

from __future__ import annotations

from pathlib import Path

from lineup.ops.drill._dev_reloads import SCOPE, DevReloads, check_dev_reloads, dev_tools

ECHO = f"{SCOPE}.echo"


def examples(inventories: list[frozenset[str]], final: set[str], broken: set[str]) -> list[str]:
    (rule,) = check_dev_reloads(inventories, frozenset(final), broken)
    return rule.examples


def test_the_last_inventory_with_the_last_save_passes() -> None:
    told = [frozenset({ECHO, f"{SCOPE}.s0"}), frozenset({ECHO, f"{SCOPE}.s2"})]
    assert examples(told, {ECHO, f"{SCOPE}.s2"}, {f"{SCOPE}.broken1"}) == []


def test_a_last_save_never_told_or_a_broken_save_told_is_caught() -> None:
    told = [frozenset({ECHO, f"{SCOPE}.broken1"}), frozenset({ECHO, f"{SCOPE}.s0"})]
    assert examples(told, {ECHO, f"{SCOPE}.s2"}, {f"{SCOPE}.broken1"}) == [
        f"the last inventory lists ['{ECHO}', '{SCOPE}.s0'], saved ['{ECHO}', '{SCOPE}.s2']",
        f"{SCOPE}.broken1: of a save that does not import, yet in an inventory",
    ]
    assert examples([], {ECHO}, set()) == ["the Agent got no inventory"]


def test_the_app_s_tools_are_read_from_an_inventory_and_saves_replace_the_code(
    tmp_path: Path,
) -> None:
    payload = {"tools": [{"method": ECHO}, {"method": "drill.echo"}, "junk"]}
    assert dev_tools(payload) == {ECHO}
    reloads = DevReloads(seed=1)
    reloads.folder = tmp_path / "drilldev"
    reloads.folder.mkdir()
    reloads._save(3, broken=True)
    assert "def oops(self) -> None\n" in (reloads.folder / "__init__.py").read_text()
    assert reloads.broken == {f"{SCOPE}.broken3"} and reloads.final == frozenset()
    reloads._save(4, broken=False)
    compile((reloads.folder / "__init__.py").read_text(), "drilldev", "exec")
    assert reloads.final == {ECHO, f"{SCOPE}.s4"}
    assert sorted(p.name for p in reloads.folder.iterdir()) == ["__init__.py"]
