"""`python -m lineup.ops.catalog build`: the dev key made once, every example packed and signed
by `lineup app pack` (real subprocesses), a second build with nothing changed a no-op, a
changed version replacing its old bundle."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

import lineup
from lineup.facts.npm_pins import BASIC_VANILLAJS
from lineup.ops import catalog
from lineup.sdk.bundle import PublicKey, read_header, verify_bundle
from lineup.tests.support.bundles import PACKAGE, write_package


def examples(root: Path, version: str) -> Path:
    write_package(root, scope="deliver", version=version)
    (root / "not_a_package").mkdir(exist_ok=True)  # no __init__.py: passed over
    return root


def test_the_catalog_is_the_examples_packed_and_signed_with_a_key_made_once(
    tmp_path: Path,
) -> None:
    out, key = tmp_path / "build" / "catalog", tmp_path / "build" / "dev-key" / "lineup-dev"
    root = examples(tmp_path / "examples", "1.0")
    wrote = catalog.build(out, key, root, ())
    assert wrote == ["deliver-1.0.lineup"]
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    public = PublicKey.loads((out / "lineup-dev.pub").read_bytes())
    assert (out / "lineup-dev.pub").read_bytes() == key.with_name("lineup-dev.pub").read_bytes()
    data = (out / "deliver-1.0.lineup").read_bytes()
    bundle = verify_bundle(
        data, trusted={public.key_id: public.key}, host_version=lineup.__version__
    )
    assert (bundle.signed.app_scope, bundle.signed.version) == ("deliver", "1.0")
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "deliver-1.0.lineup",
        "lineup-dev.pub",
    ]


def test_a_second_build_with_nothing_changed_writes_nothing(tmp_path: Path) -> None:
    out, key = tmp_path / "catalog", tmp_path / "key" / "dev"
    root = examples(tmp_path / "examples", "1.0")
    catalog.build(out, key, root, ())
    before = {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in out.iterdir()}
    key_before = key.read_bytes()
    assert catalog.build(out, key, root, ()) == []
    assert {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in out.iterdir()} == before
    assert key.read_bytes() == key_before  # never made again


def test_a_new_version_replaces_its_old_bundle_and_keeps_the_key(tmp_path: Path) -> None:
    out, key = tmp_path / "catalog", tmp_path / "key" / "dev"
    root = examples(tmp_path / "examples", "1.0")
    catalog.build(out, key, root, ())
    first_key = read_header((out / "deliver-1.0.lineup").read_bytes())[0].key_id
    examples(root, "1.1")
    assert catalog.build(out, key, root, ()) == ["deliver-1.1.lineup"]
    assert not (out / "deliver-1.0.lineup").exists()
    assert read_header((out / "deliver-1.1.lineup").read_bytes())[0].key_id == first_key


def test_a_package_that_does_not_pack_fails_the_build_with_one_line(tmp_path: Path) -> None:
    root = tmp_path / "examples"
    (root / PACKAGE).mkdir(parents=True)
    (root / PACKAGE / "__init__.py").write_text("raise RuntimeError('broken')\n")
    code = catalog.main(
        ["build", "--out", str(tmp_path / "c"), "--key", str(tmp_path / "k" / "dev"),
         "--examples", str(root)]
    )  # fmt: skip
    assert code == 1
    assert not list((tmp_path / "c").glob("*.lineup"))


def test_the_catalog_packs_the_pinned_mcp_server_once(tmp_path: Path) -> None:
    """Up to fifteen seconds on a loaded machine, by what it proves: the catalog's own real
    `pack-mcp` of the pinned npm server (fetched without install scripts, listed once in the
    sandbox, offline), then a second build that asks npm nothing."""
    out, key = tmp_path / "catalog", tmp_path / "key" / "dev"
    root = examples(tmp_path / "examples", "1.0")
    name = f"server-basic-vanillajs-{BASIC_VANILLAJS.version}.lineup"
    assert catalog.build(out, key, root) == ["deliver-1.0.lineup", name]
    public = PublicKey.loads((out / "dev.pub").read_bytes())
    bundle = verify_bundle(
        (out / name).read_bytes(),
        trusted={public.key_id: public.key},
        host_version=lineup.__version__,
    )
    assert (bundle.manifest.kind, bundle.manifest.version) == ("mcp", BASIC_VANILLAJS.version)
    before = {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in out.iterdir()}
    assert catalog.build(out, key, root) == []  # nothing changed: npm is not even asked
    assert {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in out.iterdir()} == before


def test_without_npm_the_catalog_says_so_in_one_line_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no npm, no node
    out, key = tmp_path / "catalog", tmp_path / "key" / "dev"
    root = examples(tmp_path / "examples", "1.0")
    code = catalog.main(["build", "--out", str(out), "--key", str(key), "--examples", str(root)])
    assert code == 0
    assert sorted(p.name for p in out.glob("*.lineup")) == ["deliver-1.0.lineup"]
    said = [line for line in capsys.readouterr().out.splitlines() if "MCP server" in line]
    assert len(said) == 1 and "npm_not_found" in said[0]
