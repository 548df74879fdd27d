"""The local catalog folder's reads (`focus._catalog`), synchronously on a real folder: bounded,
regular files only, links never followed, keys only when trusted, and a bundle verified again
only when it changed or what it is verified against did."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lineup.actors.focus import _catalog
from lineup.actors.focus._catalog import Catalog, basis_of, valid_name
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk.bundle import SigningKey
from lineup.tests.support.bundles import build_bundle

KEY = SigningKey(b"\x0c" * 32)
HEADERLESS = b"not a bundle"


class Counting:
    """A verification that says yes and counts what it was given."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    def __call__(self, data: bytes) -> ErrorCode | None:
        self.seen.append(data)
        return None


def bundle_bytes(tmp_path: Path) -> bytes:
    return build_bundle(tmp_path / "src", KEY, scope="deliver", version="1.0")


def test_a_changed_bundle_is_verified_again_and_an_unchanged_one_is_not(tmp_path: Path) -> None:
    data = bundle_bytes(tmp_path)
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "deliver-1.0.lineup").write_bytes(data)
    catalog, verify = Catalog(folder, trusted=True), Counting()
    basis = basis_of({}, set())
    first = catalog.entries(verify, basis)
    assert [(e.file, e.app_scope, e.version, e.key_id, e.code) for e in first] == [
        ("deliver-1.0.lineup", "deliver", "1.0", KEY.key_id, None)
    ]
    assert catalog.entries(verify, basis) == first
    assert len(verify.seen) == 1
    assert catalog.entries(verify, basis_of({KEY.key_id: KEY.public.key}, set())) == first
    assert len(verify.seen) == 2  # what it is verified against changed
    os.utime(folder / "deliver-1.0.lineup", ns=(1, 1))
    catalog.entries(verify, basis_of({KEY.key_id: KEY.public.key}, set()))
    assert len(verify.seen) == 3  # the file changed


def test_only_regular_files_with_plain_names_are_entries_and_links_are_not_followed(
    tmp_path: Path,
) -> None:
    data = bundle_bytes(tmp_path)
    folder = tmp_path / "catalog"
    (folder / "folder.lineup").mkdir(parents=True)
    (tmp_path / "outside.lineup").write_bytes(data)
    os.symlink(tmp_path / "outside.lineup", folder / "link.lineup")
    (folder / ".hidden.lineup").write_bytes(data)
    (folder / "notes.txt").write_bytes(data)
    (folder / "junk.lineup").write_bytes(HEADERLESS)
    catalog = Catalog(folder, trusted=True)
    entries = catalog.entries(Counting(), basis_of({}, set()))
    assert [(e.file, e.app_scope, e.code) for e in entries] == [
        ("junk.lineup", None, ErrorCode.BUNDLE_MALFORMED.value)
    ]
    for name in ("link.lineup", "folder.lineup", "../outside.lineup", ".hidden.lineup", "x.lineup"):
        with pytest.raises(LineUpError) as refused:
            catalog.read(name)
        assert refused.value.code is ErrorCode.CATALOG_ENTRY_NOT_FOUND


def test_the_catalog_is_bounded_in_entries_and_in_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "catalog"
    folder.mkdir()
    for n in range(5):
        (folder / f"b{n}.lineup").write_bytes(HEADERLESS)
    (folder / "big.lineup").write_bytes(b"\0" * 2000)
    monkeypatch.setattr(_catalog, "MAX_ENTRIES", 3)
    monkeypatch.setattr(_catalog, "MAX_BUNDLE_BYTES", 1000)
    catalog = Catalog(folder, trusted=True)
    entries = catalog.entries(Counting(), basis_of({}, set()))
    assert [e.file for e in entries] == ["b0.lineup", "b1.lineup", "b2.lineup"]
    with pytest.raises(LineUpError) as refused:
        catalog.read("big.lineup")
    assert refused.value.code is ErrorCode.BUNDLE_MALFORMED


def test_the_catalog_s_keys_count_only_when_it_is_trusted(tmp_path: Path) -> None:
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "lineup-dev.pub").write_text(KEY.public.dumps())
    (folder / "broken.pub").write_text("not a key")
    assert Catalog(folder, trusted=False).keys() == {}
    assert Catalog(folder, trusted=True).keys() == {KEY.key_id: KEY.public.key}
    assert Catalog(tmp_path / "missing", trusted=True).keys() == {}


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("draw-and-guess-1.0.0.lineup", True),
        ("../x.lineup", False),
        ("a/b.lineup", False),
        ("a..lineup", False),
        ("..lineup", False),
        ("x.pub", False),
        ("x" * 200 + ".lineup", False),
    ],
)
def test_a_catalog_file_name_is_one_plain_name(name: str, ok: bool) -> None:
    assert valid_name(name) is ok
