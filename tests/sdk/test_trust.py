"""The trust store: what it trusts, what it refuses to read, how it writes."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk.bundle import PublicKey, SigningKey
from lineup.sdk.trust import TRUSTED_KEYS_FILE, TrustStore


def test_a_missing_file_trusts_no_key(tmp_path: Path) -> None:
    store = TrustStore(tmp_path / "absent")
    assert store.keys() == {}
    assert store.list() == []
    assert not (tmp_path / "absent").exists()


def test_an_added_key_is_trusted_by_its_key_id_and_written_0600(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    key = SigningKey.generate().public
    assert TrustStore(data_dir).add(key) is True
    path = data_dir / TRUSTED_KEYS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert TrustStore(data_dir).keys() == {key.key_id: key.key}
    (entry,) = TrustStore(data_dir).list()
    assert entry.key_id == key.key_id
    assert entry.added_at.endswith("+00:00")
    raw = json.loads(path.read_text())
    assert raw == {
        "keys": [
            {
                "key_id": key.key_id,
                "public_key": base64.b64encode(key.key).decode(),
                "added_at": entry.added_at,
            }
        ]
    }


def test_adding_a_key_twice_says_so_and_keeps_one_entry(tmp_path: Path) -> None:
    key = SigningKey.generate().public
    other = SigningKey.generate().public
    store = TrustStore(tmp_path)
    assert store.add(key) is True
    before = (tmp_path / TRUSTED_KEYS_FILE).read_bytes()
    assert store.add(key) is False
    assert (tmp_path / TRUSTED_KEYS_FILE).read_bytes() == before
    assert store.add(other) is True
    assert [entry.key_id for entry in store.list()] == [key.key_id, other.key_id]


def test_a_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    store = TrustStore(tmp_path)
    for _ in range(3):
        store.add(SigningKey.generate().public)
    assert sorted(os.listdir(tmp_path)) == [TRUSTED_KEYS_FILE]


def _valid_entry() -> dict[str, str]:
    key = SigningKey.generate().public
    return {
        "key_id": key.key_id,
        "public_key": base64.b64encode(key.key).decode(),
        "added_at": "2025-01-01T00:00:00+00:00",
    }


def _wrong_id() -> dict[str, str]:
    entry = _valid_entry()
    entry["key_id"] = SigningKey.generate().key_id
    return entry


def _short_key() -> dict[str, str]:
    entry = _valid_entry()
    entry["public_key"] = base64.b64encode(b"x" * 31).decode()
    return entry


CORRUPT = {
    "not json": b"{",
    "a list": b"[]",
    "no keys": b"{}",
    "an extra field": json.dumps({"keys": [], "more": 1}).encode(),
    "keys not a list": json.dumps({"keys": {}}).encode(),
    "an entry not an object": json.dumps({"keys": ["x"]}).encode(),
    "an entry missing a field": json.dumps(
        {"keys": [{k: v for k, v in _valid_entry().items() if k != "added_at"}]}
    ).encode(),
    "a key not base64": json.dumps({"keys": [{**_valid_entry(), "public_key": "!!"}]}).encode(),
    "a key_id not its key's": json.dumps({"keys": [_valid_entry(), _wrong_id()]}).encode(),
    "a key of 31 bytes": json.dumps({"keys": [_short_key()]}).encode(),
    "not utf-8": b"\xff\xfe",
}


@pytest.mark.parametrize("body", CORRUPT.values(), ids=CORRUPT.keys())
def test_a_corrupt_file_trusts_nothing_and_is_never_overwritten(
    tmp_path: Path, body: bytes
) -> None:
    (tmp_path / TRUSTED_KEYS_FILE).write_bytes(body)
    store = TrustStore(tmp_path)
    with pytest.raises(LineUpError) as exc:
        store.keys()
    assert exc.value.code is ErrorCode.INVALID_ARGUMENTS
    with pytest.raises(LineUpError) as exc:
        store.add(SigningKey.generate().public)
    assert exc.value.code is ErrorCode.INVALID_ARGUMENTS
    assert (tmp_path / TRUSTED_KEYS_FILE).read_bytes() == body


def test_a_duplicate_entry_is_corrupt(tmp_path: Path) -> None:
    entry = _valid_entry()
    (tmp_path / TRUSTED_KEYS_FILE).write_text(json.dumps({"keys": [entry, entry]}))
    with pytest.raises(LineUpError) as exc:
        TrustStore(tmp_path).keys()
    assert exc.value.code is ErrorCode.INVALID_ARGUMENTS


def test_a_key_file_round_trips_into_the_store(tmp_path: Path) -> None:
    key = PublicKey.loads(SigningKey.generate().public.dumps())
    TrustStore(tmp_path).add(key)
    assert TrustStore(tmp_path).keys()[key.key_id] == key.key
