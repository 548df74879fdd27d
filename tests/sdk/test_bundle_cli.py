"""`lineup app keygen | pack | verify | trust`: their output, exit status and files, each command
run through the `lineup` CLI's own `main` in this process (`support/cli.py`); the first test runs
`pack` and `verify` as the user runs them, `python -m lineup` in a process of its own."""

from __future__ import annotations

import json
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from lineup.sdk.bundle import MAX_PATH, MAX_PATH_PART, PublicKey, SigningKey, read_header
from lineup.sdk.trust import TRUSTED_KEYS_FILE, TrustStore, default_data_dir
from lineup.supervisor.cli import default_data_dir as runtime_default_data_dir
from lineup.tests.support import process
from lineup.tests.support.cli import lineup

APP = """
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppInfo, MiniApp, ToolCall, tool


class Ping(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=10)


class Pinger(MiniApp):
    app_info = AppInfo(app_scope="pinger", version="1.2.0", kind="{kind}")

    @tool("pinger.ping", handling="direct", input=Ping, output=Ping)
    async def ping(self, call: ToolCall[Ping]) -> Ping:
        return call.input
"""


def lineup_app(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`lineup app ARGS` from `cwd`, in this process."""
    return lineup("app", *args, cwd=cwd, env=env)


def lineup_app_process(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`lineup app ARGS` from `cwd`, as the user runs it: an interpreter of its own."""
    result = process.lineup_app(*args, cwd=cwd, timeout=30)
    assert "Traceback" not in result.stderr
    return result


def write_app(root: Path, name: str = "pingapp", kind: str = "installed") -> Path:
    folder = root / name
    (folder / "web").mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(APP).format(kind=kind))
    (folder / "web" / "index.html").write_text("<p>ping</p>\n")
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with a key pair `key`/`key.pub` as `keygen` writes it (its own tests run it)
    and the app package `pingapp`."""
    key = SigningKey.generate()
    (tmp_path / "key").write_text(key.dumps())
    (tmp_path / "key").chmod(0o600)
    (tmp_path / "key.pub").write_text(key.public.dumps())
    write_app(tmp_path)
    return tmp_path


def test_keygen_writes_a_private_key_0600_and_its_public_key_and_prints_the_key_id(
    tmp_path: Path,
) -> None:
    result = lineup_app(tmp_path, "keygen", "--out", "signer")
    assert result.returncode == 0
    private = SigningKey.loads((tmp_path / "signer").read_bytes())
    public = PublicKey.loads((tmp_path / "signer.pub").read_bytes())
    assert result.stdout == f"{private.key_id}\n"
    assert public == private.public
    assert stat.S_IMODE((tmp_path / "signer").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "signer.pub").stat().st_mode) & 0o077 in (0, 0o044)


@pytest.mark.parametrize("existing", ["signer", "signer.pub"])
def test_keygen_refuses_to_overwrite_either_file_of_a_pair(tmp_path: Path, existing: str) -> None:
    (tmp_path / existing).write_text("precious")
    result = lineup_app(tmp_path, "keygen", "--out", "signer")
    assert result.returncode == 1
    assert result.stderr.startswith("lineup app keygen: output_exists ")
    assert len(result.stderr.splitlines()) == 1
    assert (tmp_path / existing).read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == [existing]


def test_pack_writes_a_bundle_that_verifies_with_the_authors_public_key(work: Path) -> None:
    """Both as the user runs them, in processes of their own: the installed entry point and
    its exit status, which the other tests take as proven."""
    packed = lineup_app_process(work, "pack", "pingapp", "--key", "key", "--out", "ping.lineup")
    assert packed.returncode == 0, packed.stderr
    signed, _ = read_header((work / "ping.lineup").read_bytes())
    line = (
        f"pinger 1.2.0 {signed.size} bytes sha256 {signed.sha256} key "
        f"{SigningKey.loads((work / 'key').read_bytes()).key_id}\n"
    )
    assert packed.stdout == line
    assert signed.min_host_version == "0.1.0"  # the running LineUp's, by default
    assert not [p for p in work.iterdir() if p.name.endswith(".tmp")]
    verified = lineup_app_process(work, "verify", "ping.lineup", "--key", "key.pub")
    assert (verified.returncode, verified.stdout) == (0, "ok " + line)


def test_pack_is_reproducible(work: Path) -> None:
    for out in ("a.lineup", "b.lineup"):
        assert lineup_app(work, "pack", "pingapp", "--key", "key", "--out", out).returncode == 0
    assert (work / "a.lineup").read_bytes() == (work / "b.lineup").read_bytes()


def test_pack_refuses_an_app_that_is_not_installed_kind(work: Path) -> None:
    write_app(work, "bundledapp", kind="bundled-reference")
    result = lineup_app(work, "pack", "bundledapp", "--key", "key", "--out", "x.lineup")
    assert result.returncode == 1
    assert result.stderr.startswith("lineup app pack: app_not_installable ")
    assert not (work / "x.lineup").exists()


@pytest.mark.parametrize(
    "parts",
    [
        ["web", "a" * (MAX_PATH_PART + 1) + ".js"],  # one part over the bound
        ["web", *["d" * MAX_PATH_PART] * 4, "app.js"],  # each part within, the whole over
    ],
)
def test_pack_refuses_a_path_verification_would_refuse_and_writes_nothing(
    work: Path, parts: list[str]
) -> None:
    deep = work.joinpath("pingapp", *parts)
    deep.parent.mkdir(parents=True, exist_ok=True)
    deep.write_text("")
    assert len(f"app/pingapp/{'/'.join(parts)}") > MAX_PATH or len(parts[-1]) > MAX_PATH_PART
    result = lineup_app(work, "pack", "pingapp", "--key", "key", "--out", "x.lineup")
    assert result.returncode == 1
    assert result.stderr.split()[:4] == ["lineup", "app", "pack:", "bundle_malformed"]
    assert len(result.stderr.splitlines()) == 1
    assert not (work / "x.lineup").exists()
    assert not [p for p in work.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["nowhere", "--key", "key"], "app_not_found"),
        (["pingapp", "--key", "nokey"], "key_not_found"),
        (["pingapp", "--key", "key.pub"], "key_invalid"),
    ],
)
def test_pack_refusals_are_one_line_with_a_reason(work: Path, args: list[str], reason: str) -> None:
    result = lineup_app(work, "pack", *args, "--out", "x.lineup")
    assert result.returncode == 1
    assert result.stderr.split()[:4] == ["lineup", "app", "pack:", reason]
    assert len(result.stderr.splitlines()) == 1


def test_verify_refuses_a_key_the_data_dir_does_not_trust_until_it_is_trusted(
    work: Path,
) -> None:
    assert lineup_app(work, "pack", "pingapp", "--key", "key", "--out", "p.lineup").returncode == 0
    data_dir = str(work / "data")
    refused = lineup_app(work, "verify", "p.lineup", "--data-dir", data_dir)
    assert refused.returncode == 1
    assert refused.stdout.startswith("refused: unknown_key ")
    assert len(refused.stdout.splitlines()) == 1
    assert lineup_app(work, "trust", "key.pub", "--data-dir", data_dir).returncode == 0
    ok = lineup_app(work, "verify", "p.lineup", "--data-dir", data_dir)
    assert ok.returncode == 0
    assert ok.stdout.startswith("ok pinger 1.2.0 ")


def test_verify_reads_the_runtimes_default_data_dir(work: Path) -> None:
    assert lineup_app(work, "pack", "pingapp", "--key", "key", "--out", "p.lineup").returncode == 0
    env = {"XDG_DATA_HOME": str(work / "xdg")}
    assert lineup_app(work, "verify", "p.lineup", env=env).stdout.startswith("refused: unknown_key")
    TrustStore(work / "xdg" / "lineup").add(PublicKey.loads((work / "key.pub").read_bytes()))
    assert lineup_app(work, "verify", "p.lineup", env=env).returncode == 0


def test_the_default_data_dir_is_the_runtimes() -> None:
    assert runtime_default_data_dir is default_data_dir  # one definition, not a copy
    assert default_data_dir() == runtime_default_data_dir()


@pytest.mark.parametrize(
    ("tamper", "code"),
    [
        (lambda data: data[:-1], "size_mismatch"),
        (lambda data: data[:-40] + bytes([data[-40] ^ 1]) + data[-39:], "digest_mismatch"),
        (lambda data: b"not a bundle", "bundle_malformed"),
    ],
    ids=["a byte dropped", "a byte flipped", "not a bundle"],
)
def test_verify_says_why_a_tampered_bundle_would_not_install(
    work: Path, tamper: object, code: str
) -> None:
    assert lineup_app(work, "pack", "pingapp", "--key", "key", "--out", "p.lineup").returncode == 0
    path = work / "p.lineup"
    assert callable(tamper)
    path.write_bytes(tamper(path.read_bytes()))
    result = lineup_app(work, "verify", "p.lineup", "--key", "key.pub")
    assert result.returncode == 1
    assert result.stdout.startswith(f"refused: {code} ")


def test_verify_refuses_a_bundle_for_a_newer_host(work: Path) -> None:
    args = ["pack", "pingapp", "--key", "key", "--out", "p.lineup", "--min-host-version", "9.0"]
    assert lineup_app(work, *args).returncode == 0
    result = lineup_app(work, "verify", "p.lineup", "--key", "key.pub")
    assert result.returncode == 1
    assert result.stdout.startswith("refused: host_version_unsupported ")


def test_verify_of_a_missing_file_is_a_one_line_refusal(work: Path) -> None:
    result = lineup_app(work, "verify", "absent.lineup", "--key", "key.pub")
    assert result.returncode == 1
    assert result.stderr.startswith("lineup app verify: file_not_found ")


def test_verify_help_says_it_does_not_consult_a_runtimes_revocations(tmp_path: Path) -> None:
    result = lineup_app(tmp_path, "verify", "--help")
    assert result.returncode == 0
    assert "revocation" in " ".join(result.stdout.split())


def test_trust_adds_a_key_once_and_lists_it(work: Path) -> None:
    data_dir = work / "data"
    key_id = PublicKey.loads((work / "key.pub").read_bytes()).key_id
    first = lineup_app(work, "trust", "key.pub", "--data-dir", str(data_dir))
    assert (first.returncode, first.stdout) == (0, f"{key_id}\n")
    assert stat.S_IMODE((data_dir / TRUSTED_KEYS_FILE).stat().st_mode) == 0o600
    again = lineup_app(work, "trust", "key.pub", "--data-dir", str(data_dir))
    assert (again.returncode, again.stdout) == (0, f"{key_id} already trusted\n")
    listed = lineup_app(work, "trust", "--list", "--data-dir", str(data_dir))
    (added_at,) = [entry.added_at for entry in TrustStore(data_dir).list()]
    assert listed.stdout == f"{key_id} {added_at}\n"
    as_json = lineup_app(work, "trust", "--list", "--json", "--data-dir", str(data_dir))
    assert json.loads(as_json.stdout) == {"keys": [{"key_id": key_id, "added_at": added_at}]}


def test_trust_of_an_empty_data_dir_lists_nothing(tmp_path: Path) -> None:
    result = lineup_app(tmp_path, "trust", "--list", "--json", "--data-dir", str(tmp_path / "d"))
    assert json.loads(result.stdout) == {"keys": []}


def test_trust_refuses_a_private_key_and_a_corrupt_store(work: Path) -> None:
    data_dir = work / "data"
    private = lineup_app(work, "trust", "key", "--data-dir", str(data_dir))
    assert private.returncode == 1
    assert private.stderr.startswith("lineup app trust: key_invalid ")
    assert not data_dir.exists()
    data_dir.mkdir()
    (data_dir / TRUSTED_KEYS_FILE).write_text("{not json")
    for args in (["key.pub"], ["--list"]):
        result = lineup_app(work, "trust", *args, "--data-dir", str(data_dir))
        assert result.returncode == 1
        assert result.stderr.startswith("lineup app trust: trusted_keys_corrupt ")
    assert (data_dir / TRUSTED_KEYS_FILE).read_text() == "{not json"


@pytest.mark.parametrize(
    "args",
    [["trust"], ["trust", "key.pub", "--list"], ["trust", "key.pub", "--json"], ["publish"]],
)
def test_a_usage_error_exits_2(tmp_path: Path, args: list[str]) -> None:
    assert lineup_app(tmp_path, *args).returncode == 2


def test_manifest_still_prints_the_apps_manifest(work: Path) -> None:
    result = lineup_app(work, "manifest", "pingapp")
    assert result.returncode == 0
    assert json.loads(result.stdout)["app_scope"] == "pinger"
