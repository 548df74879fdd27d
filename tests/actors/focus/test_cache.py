"""The verified cache (`actors/focus/_cache.py`): whole versions only, verified on read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lineup.actors.focus._cache import BUNDLE_FILE, BundleCache
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk.bundle import SigningKey, VerifiedBundle, verify_bundle
from lineup.tests.support.bundles import build_bundle, tree_digest

KEY = SigningKey(b"\x07" * 32)


def verified(tmp_path: Path, version: str = "1.0") -> tuple[VerifiedBundle, bytes]:
    data = build_bundle(tmp_path / "src", KEY, version=version)
    trusted = {KEY.key_id: KEY.public.key}
    return verify_bundle(data, trusted=trusted, host_version="0.1.0"), data


async def test_a_written_bundle_verifies_and_holds_its_package(tmp_path: Path) -> None:
    cache = BundleCache(tmp_path / "data")
    bundle, data = verified(tmp_path)
    where = await cache.write(bundle, data)
    assert where == cache.version_dir("deliver", "1.0")
    assert (where / BUNDLE_FILE).read_bytes() == data
    assert (cache.app_dir("deliver", "1.0") / "deliverapp" / "__init__.py").is_file()
    assert await cache.verify("deliver", "1.0", bundle.signed.sha256)
    assert not await cache.verify("deliver", "1.0", "0" * 64)  # not the row's digest
    assert not await cache.verify("deliver", "2.0", bundle.signed.sha256)  # not there


async def test_a_changed_extra_or_missing_file_fails_verification(tmp_path: Path) -> None:
    cache = BundleCache(tmp_path / "data")
    bundle, data = verified(tmp_path)
    await cache.write(bundle, data)
    sha = bundle.signed.sha256
    source = cache.app_dir("deliver", "1.0") / "deliverapp" / "__init__.py"
    original = source.read_bytes()
    source.write_bytes(original + b"#")
    assert not await cache.verify("deliver", "1.0", sha)
    source.write_bytes(original)
    extra = source.with_name("extra.py")
    extra.write_text("")
    assert not await cache.verify("deliver", "1.0", sha)
    extra.unlink()
    assert await cache.verify("deliver", "1.0", sha)
    source.unlink()
    assert not await cache.verify("deliver", "1.0", sha)


async def test_writing_again_keeps_a_good_version_and_replaces_a_broken_one(
    tmp_path: Path,
) -> None:
    cache = BundleCache(tmp_path / "data")
    bundle, data = verified(tmp_path)
    where = await cache.write(bundle, data)
    before = tree_digest(where)
    await cache.write(bundle, data)
    assert tree_digest(where) == before
    (where / BUNDLE_FILE).write_bytes(b"garbage")
    await cache.write(bundle, data)
    assert tree_digest(where) == before
    assert [p.name for p in cache.root.iterdir()] == ["deliver"]  # no tmp left


async def test_the_sweep_removes_tmp_dirs_and_versions_the_registry_does_not_name(
    tmp_path: Path,
) -> None:
    cache = BundleCache(tmp_path / "data")
    for version in ("1.0", "1.1"):
        bundle, data = verified(tmp_path, version)
        await cache.write(bundle, data)
    (cache.root / ".tmp-deadbeef" / "app").mkdir(parents=True)
    removed = await cache.sweep({("deliver", "1.0")})
    assert sorted(removed) == [".tmp-deadbeef", "deliver/1.1"]
    assert sorted(p.name for p in cache.root.iterdir()) == ["deliver"]
    assert [p.name for p in (cache.root / "deliver").iterdir()] == ["1.0"]
    await cache.remove("deliver")
    assert list(cache.root.iterdir()) == []


async def test_a_write_the_filesystem_refuses_leaves_nothing_and_says_internal_error(
    tmp_path: Path,
) -> None:
    # A name no filesystem takes (NAME_MAX is 255 bytes), as a verified bundle could carry
    # before paths were bounded: the write fails half-way, after some files were written.
    cache = BundleCache(tmp_path / "data")
    bundle, data = verified(tmp_path)
    files = {**bundle.files, "z" * 300 + ".py": b"x"}
    hostile = dataclasses.replace(bundle, files=files)
    with pytest.raises(LineUpError) as failed:
        await cache.write(hostile, data)
    assert failed.value.code is ErrorCode.INTERNAL_ERROR
    assert [p.name for p in cache.root.iterdir()] == []  # no .tmp-*, no version
    assert not await cache.verify("deliver", "1.0", bundle.signed.sha256)
