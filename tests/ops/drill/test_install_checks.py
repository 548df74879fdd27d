"""The drill's install invariants catch each way an install can be left broken when fed such a
record: an operation left running or answered one way and journalled another, a registry row the
journal does not explain, a cache directory that is not exactly its bundle, a leftover folder."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from lineup.actors.store._db import open_database
from lineup.ops.drill._check import Invariant
from lineup.ops.drill._installs import (
    SCOPE,
    Journal,
    Row,
    Sent,
    Versions,
    bundle_problem,
    check_installs,
    replay,
)
from lineup.sdk.bundle import SigningKey, read_header
from lineup.tests.support.bundles import build_bundle

KEY = SigningKey(b"\x07" * 32)


def cached(root: Path, version: str) -> tuple[Path, str]:
    """The cache directory of `version`, as the runtime writes one: the bundle and its app/."""
    data = build_bundle(root / "src", KEY, scope=SCOPE, version=version)
    signed, payload = read_header(data)
    where = root / "bundles" / SCOPE / version
    where.mkdir(parents=True)
    (where / "bundle.lineup").write_bytes(data)
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        for info in archive.infolist():
            if info.filename.startswith("app/") and not info.is_dir():
                target = where / info.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(info))
    assert signed.sha256 == hashlib.sha256(payload).hexdigest()
    return where, signed.sha256


def journal(
    rows: list[tuple[str, Row]], versions: Versions | None, dirs: dict[str, Path]
) -> Journal:
    return Journal(dict(rows), [op_id for op_id, _ in rows], versions, dirs, [])


def broken(rules: list[Invariant]) -> dict[str, list[str]]:
    return {r.name: r.examples for r in rules if not r.passed}


@pytest.fixture
def two_versions(tmp_path: Path) -> tuple[Journal, list[Sent]]:
    v1, sha1 = cached(tmp_path, "1.0.0")
    v2, sha2 = cached(tmp_path, "1.1.0")
    rows = [
        ("op0", Row("completed", None, "1.0.0", "install")),
        ("op1", Row("failed", "digest_mismatch", "9.9.9", "update")),
        ("op2", Row("completed", None, "1.1.0", "update")),
        ("op3", Row("completed", None, None, "rollback")),
        ("op4", Row("completed", None, None, "rollback")),
    ]
    sent = [
        Sent("op0", "install", "1.0.0", (("completed", None),)),
        Sent("op1", "install", "9.9.9", (("failed", "digest_mismatch"),)),
        Sent("op2", "install", "1.1.0", ()),  # focus died with it in flight: no answer
        Sent("op3", "rollback", None, (("completed", None), ("completed", None))),
        Sent("op4", "rollback", None, (("completed", None),)),
    ]
    versions = Versions("1.1.0", sha2, "1.0.0", sha1)
    return journal(rows, versions, {"1.0.0": v1, "1.1.0": v2}), sent


def test_a_whole_history_passes(two_versions: tuple[Journal, list[Sent]]) -> None:
    record, sent = two_versions
    assert replay(record) == ("1.1.0", "1.0.0")  # two rollbacks: back where it was
    assert broken(check_installs(sent, record)) == {}


def test_an_operation_left_running_or_answered_otherwise_is_caught(
    two_versions: tuple[Journal, list[Sent]],
) -> None:
    record, sent = two_versions
    record.operations["op5"] = Row("running", None, None, "disable")
    record.order.append("op5")
    sent[0] = Sent("op0", "install", "1.0.0", (("failed", "actor_restarted"),))
    sent.append(Sent("op6", "remove", None, ()))  # never journalled
    examples = broken(check_installs(sent, record))["installs_end_once"]
    assert any("op5: left running" in e for e in examples)
    assert any(e.startswith("op0: answered") for e in examples)
    assert any("op6: no row" in e for e in examples)


def test_a_registry_the_journal_does_not_explain_is_caught(
    two_versions: tuple[Journal, list[Sent]],
) -> None:
    record, sent = two_versions
    record.operations["op4"] = Row("failed", "actor_restarted", None, "rollback")
    # The journal now leaves 1.0.0 active, the registry still says 1.1.0.
    (example,) = broken(check_installs(sent[:4], record))["installed_version_whole"]
    assert "the journal says 1.0.0/1.1.0" in example


def test_a_cache_that_is_not_exactly_its_bundle_is_caught(
    two_versions: tuple[Journal, list[Sent]],
) -> None:
    record, sent = two_versions
    where = record.version_dirs["1.0.0"]
    source = next((where / "app").rglob("__init__.py"))
    assert record.row is not None
    assert bundle_problem(where, "1.0.0", record.row.previous_sha256) is None
    source.write_text(source.read_text() + "\n# changed\n")
    (example,) = broken(check_installs(sent, record))["installed_version_whole"]
    assert example.startswith("1.0.0:") and "differs" in example
    (where / "bundle.lineup").unlink()
    assert "no readable bundle" in str(bundle_problem(where, "1.0.0", None))


def test_leftover_folders_and_unnamed_versions_are_caught(
    two_versions: tuple[Journal, list[Sent]], tmp_path: Path
) -> None:
    record, sent = two_versions
    stray, _ = cached(tmp_path, "2.0.0")
    record.version_dirs["2.0.0"] = stray
    record.leftovers.append(".tmp-0123abcd")
    examples = broken(check_installs(sent, record))["no_install_leftovers"]
    assert examples == ["bundles/.tmp-0123abcd", f"bundles/{SCOPE}/2.0.0: named by no row"]


def test_a_removed_app_leaves_no_row_and_the_journal_agrees(tmp_path: Path) -> None:
    rows = [
        ("op0", Row("completed", None, "1.0.0", "install")),
        ("op1", Row("completed", None, None, "remove")),
    ]
    assert broken(check_installs([], journal(rows, None, {}))) == {}
    lost = journal(rows[:1], None, {})  # the row is gone but no remove completed
    (example,) = broken(check_installs([], lost))["installed_version_whole"]
    assert "the journal says 1.0.0 is active" in example


def test_the_journal_is_read_from_a_real_store_and_cache(tmp_path: Path) -> None:
    """`Journal.read` of a fresh store: no rows, no cache; the leftover folder is seen."""
    open_database(tmp_path, {}).close()
    (tmp_path / "bundles" / ".tmp-feed").mkdir(parents=True)
    record = Journal.read(tmp_path)
    assert (record.operations, record.row, record.version_dirs) == ({}, None, {})
    assert record.leftovers == [".tmp-feed"]
