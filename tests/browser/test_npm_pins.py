"""The tests' npm packages are the pinned ones, or the tests stop (`tests/support/npm.py`)."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.npm import installed

from ._axe import AXE


def test_a_package_whose_registry_integrity_is_not_the_pinned_one_is_refused() -> None:
    good = installed(AXE)
    other = dataclasses.replace(AXE, integrity="sha512-" + "A" * 86 + "==")
    with pytest.raises(RuntimeError, match="integrity"):
        installed(other)
    # The refused install left nothing behind, and the pinned one is still there.
    assert installed(AXE) == good
    assert (good / "axe.min.js").is_file()
    assert not [p for p in good.parents[1].parent.iterdir() if p.name.startswith("install-")]
