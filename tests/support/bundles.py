"""Signed bundles built by the tests: a tiny installed MiniApp package written to a folder,
its manifest generated from its code, packed with `lineup.sdk.bundle.pack`, and the signer
made trusted in a data dir's `trusted-keys.json`."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from lineup.sdk import MiniApp
from lineup.sdk.bundle import PublicKey, SigningKey, pack
from lineup.sdk.manifest import Manifest
from lineup.sdk.tools import manifest_of
from lineup.sdk.trust import TrustStore

PACKAGE = "deliverapp"

_SOURCE = '''"""A tiny installed MiniApp: one launch tool that answers with its own version."""

from __future__ import annotations

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool

VERSION = "{version}"


class EchoInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    text: str = Field(max_length=100)
    hang: bool = False


class EchoOutput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    text: str = Field(max_length=100)
    version: str = Field(max_length=20)


class Deliver(MiniApp):
    app_info = AppInfo(app_scope="{scope}", version=VERSION, kind="installed")

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool("{scope}.echo", handling="launch", input=EchoInput, output=EchoOutput, timeout_ms=20_000)
    async def echo(self, call: ToolCall[EchoInput]) -> EchoOutput:
        if call.input.hang:
            await trio.sleep_forever()
        return EchoOutput(text=call.input.text, version=VERSION)
{extra}'''

# A tool only later versions have: an update (and a rollback) changes the inventory.
_EXTRA = """
    @tool("{scope}.shout", handling="launch", input=EchoInput, output=EchoOutput, timeout_ms=5_000)
    async def shout(self, call: ToolCall[EchoInput]) -> EchoOutput:
        return EchoOutput(text=call.input.text.upper(), version=VERSION)
"""


def write_package(folder: Path, *, scope: str, version: str, shout: bool = False) -> Path:
    """The app's package `folder/deliverapp/` for `version` (with a second tool, `shout`)."""
    package = folder / PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    extra = _EXTRA.format(scope=scope) if shout else ""
    (package / "__init__.py").write_text(_SOURCE.format(scope=scope, version=version, extra=extra))
    return package


def manifest_for(package: Path) -> Manifest:
    """The manifest generated from the package's code (imported here under a name of its own,
    so two versions never share a module)."""
    name = f"_bundle_{hashlib.sha256(str(package).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, package / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    app_class = next(
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, MiniApp) and v is not MiniApp
    )
    return manifest_of(app_class)


def build_bundle(
    folder: Path,
    key: SigningKey,
    *,
    scope: str = "deliver",
    version: str = "1.0",
    min_host_version: str = "0.1",
    shout: bool = False,
) -> bytes:
    package = write_package(
        folder / f"{scope}-{version}", scope=scope, version=version, shout=shout
    )
    manifest = manifest_for(package)
    return pack(package, manifest, key, min_host_version=min_host_version)


def trust(data_dir: Path, key: PublicKey) -> None:
    """Add `key` to the data dir's trusted keys (what `lineup app trust` does)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    TrustStore(data_dir).add(key)


def tree_digest(root: Path) -> str:
    """One digest of every path and byte under `root` ("" if it does not exist)."""
    if not root.exists():
        return ""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()
