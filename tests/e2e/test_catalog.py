"""The local catalog folder (`lineup run --catalog DIR`, issue 17) through real processes: its
bundles are listed with the code each would get, installed by file name through the same
verification as any bundle; its key is trusted only with the embedded default (never written
into trusted-keys.json); a bundle tampered in one byte is listed with its code and refused
with it; a name that is not a plain catalog file name, a missing one or a link is
`catalog_entry_not_found`; and an app whose signer is no longer trusted is unavailable at the
next start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest
import trio

from lineup.actors.kernel import ActorKind, ErrorCode
from lineup.sdk.bundle import SigningKey
from lineup.sdk.protocol import CatalogEntry, RegistryListReply
from lineup.sdk.trust import TRUSTED_KEYS_FILE
from lineup.supervisor._runtime import RuntimeOptions, plan_runtime
from lineup.tests.support.bundles import (
    app_of,
    build_bundle,
    flip_byte,
    install,
    listing,
    start_delivery,
    tree_digest,
    trust,
    write_catalog,
)
from lineup.tests.support.tree import attach

SCOPE = "deliver"
KEY = SigningKey(b"\x07" * 32)
FILE = f"{SCOPE}-1.0.lineup"


def entry_of(reply: RegistryListReply, name: str) -> CatalogEntry:
    found = next((e for e in reply.catalog if e.file == name), None)
    assert found is not None, name
    return found


def test_the_catalog_s_keys_are_trusted_only_with_the_embedded_appserver(tmp_path: Path) -> None:
    def focus_of(appserver: str | None = None) -> Mapping[str, object]:
        options = RuntimeOptions(data_dir=tmp_path, catalog=tmp_path / "c", appserver=appserver)
        return next(s.config for s in plan_runtime(options).specs if s.name == "focus")

    embedded = focus_of()
    assert (embedded["catalog"], embedded["catalog_trusted"]) == (str(tmp_path / "c"), True)
    external = focus_of(appserver="http://127.0.0.1:9")
    assert (external["catalog"], external["catalog_trusted"]) == (str(tmp_path / "c"), False)
    assert "catalog" not in next(
        s.config for s in plan_runtime(RuntimeOptions(data_dir=tmp_path)).specs if s.name == "focus"
    )


async def test_a_catalog_bundle_is_listed_installed_by_name_and_then_listed_as_installed(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    data = build_bundle(tmp_path / "src", KEY, scope=SCOPE, version="1.0", title="Delivery Probe")
    folder = write_catalog(tmp_path / "catalog", KEY, {FILE: data})
    runtime = await start_delivery(nursery, data_dir, catalog=folder)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")

    offered = entry_of(await listing(cli), FILE)
    assert (offered.app_scope, offered.version, offered.key_id, offered.size, offered.code) == (
        SCOPE,
        "1.0",
        KEY.key_id,
        len(data),
        None,
    )
    assert [e.file for e in (await listing(cli)).catalog] == [FILE]  # the .pub is no entry

    done = await install(cli, "op-cat", catalog_file=FILE)
    assert (done.state, done.kind, done.version) == ("completed", "install", "1.0")
    assert (data_dir / "bundles" / SCOPE / "1.0" / "bundle.lineup").read_bytes() == data
    after = await listing(cli)
    assert (app_of(after, SCOPE).state, app_of(after, SCOPE).key_id) == ("active", KEY.key_id)
    assert app_of(after, SCOPE).title == "Delivery Probe"  # its manifest's, not its scope
    assert entry_of(after, FILE).code == ErrorCode.APP_VERSION_MISMATCH.value
    # The catalog's key counts beside trusted-keys.json, never written into it.
    assert not (data_dir / TRUSTED_KEYS_FILE).exists()


async def test_the_bundle_tampered_in_one_byte_is_listed_with_its_code_and_refused_with_it(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    data = build_bundle(tmp_path / "src", KEY, scope=SCOPE, version="1.0")
    folder = write_catalog(tmp_path / "catalog", KEY, {FILE: data})
    runtime = await start_delivery(nursery, data_dir, catalog=folder)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    assert entry_of(await listing(cli), FILE).code is None

    # Flipped in place: same size, a new mtime. The listing verifies it again.
    (folder / FILE).write_bytes(flip_byte(data))
    listed = entry_of(await listing(cli), FILE)
    assert listed.code == ErrorCode.DIGEST_MISMATCH.value
    done = await install(cli, "op-bad", catalog_file=FILE)
    assert (done.state, done.code) == ("failed", ErrorCode.DIGEST_MISMATCH.value)
    assert tree_digest(data_dir / "bundles") == ""
    assert app_of(await listing(cli), SCOPE) is None


async def test_with_an_external_appserver_the_catalog_is_refused_unknown_key_until_trusted(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    data = build_bundle(tmp_path / "src", KEY, scope=SCOPE, version="1.0")
    folder = write_catalog(tmp_path / "catalog", KEY, {FILE: data})
    # As `plan_runtime` configures focus with --appserver: the catalog's keys are not trusted.
    runtime = await start_delivery(nursery, data_dir, catalog=folder, catalog_trusted=False)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    assert entry_of(await listing(cli), FILE).code == ErrorCode.UNKNOWN_KEY.value
    done = await install(cli, "op-untrusted", catalog_file=FILE)
    assert (done.state, done.code) == ("failed", ErrorCode.UNKNOWN_KEY.value)
    assert tree_digest(data_dir / "bundles") == ""

    trust(data_dir, KEY.public)  # `lineup app trust`: counts at once
    assert entry_of(await listing(cli), FILE).code is None
    assert (await install(cli, "op-trusted", catalog_file=FILE)).state == "completed"


@pytest.mark.parametrize(
    "name", ["../deliver-1.0.lineup", "sub/deliver-1.0.lineup", "missing.lineup", "link.lineup"]
)
async def test_a_name_that_is_not_a_catalog_file_is_catalog_entry_not_found(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path, name: str
) -> None:
    data = build_bundle(tmp_path / "src", KEY, scope=SCOPE, version="1.0")
    # A valid bundle beside the catalog and in a folder of it: neither is the catalog's.
    (tmp_path / FILE).write_bytes(data)
    folder = write_catalog(tmp_path / "catalog", KEY, {})
    (folder / "sub").mkdir()
    (folder / "sub" / FILE).write_bytes(data)
    os.symlink(tmp_path / FILE, folder / "link.lineup")
    runtime = await start_delivery(nursery, data_dir, catalog=folder)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    assert (await listing(cli)).catalog == ()  # the link and the folder are no entries
    done = await install(cli, "op-name", catalog_file=name)
    assert (done.state, done.code) == ("failed", ErrorCode.CATALOG_ENTRY_NOT_FOUND.value)
    assert tree_digest(data_dir / "bundles") == ""


async def test_an_app_from_the_catalog_is_unavailable_where_its_key_is_not_trusted(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    data = build_bundle(tmp_path / "src", KEY, scope=SCOPE, version="1.0")
    folder = write_catalog(tmp_path / "catalog", KEY, {FILE: data})
    async with trio.open_nursery() as first_run:
        runtime = await start_delivery(first_run, data_dir, catalog=folder)
        cli = await attach(first_run, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
        assert (await install(cli, "op-cat", catalog_file=FILE)).state == "completed"
        first_run.cancel_scope.cancel()

    # The same data dir with an external AppServer: the dev key is not trusted there.
    runtime = await start_delivery(nursery, data_dir, catalog=folder, catalog_trusted=False)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    app = app_of(await listing(cli), SCOPE)
    assert app.state == "unavailable"
    assert f"miniapp:{SCOPE}" not in runtime.supervisor.children


async def test_an_install_pinned_to_another_digest_than_the_file_s_is_refused(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    # The gateway pins the install to the digest the user was shown: a catalog file replaced
    # between the prompt and the install (by another validly signed bundle) installs nothing.
    v1 = build_bundle(tmp_path / "src", KEY, scope=SCOPE, version="1.0")
    folder = write_catalog(tmp_path / "catalog", KEY, {FILE: v1})
    runtime = await start_delivery(nursery, data_dir, catalog=folder)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    done = await install(cli, "op-pinned", catalog_file=FILE, sha256="0" * 64)
    assert (done.state, done.code) == ("failed", ErrorCode.DIGEST_MISMATCH.value)
    assert tree_digest(data_dir / "bundles") == ""
