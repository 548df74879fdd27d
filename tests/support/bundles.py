"""Signed bundles built by the tests: a tiny installed MiniApp package written to a folder,
its manifest generated from its code, packed with `lineup.sdk.bundle.pack`, and the signer
made trusted in a data dir's `trusted-keys.json`. Options add a second tool (`shout`), a
Surface (`surface`: the `board` entrypoint, `web/index.html`, and `<scope>.open` that opens it),
capabilities (`permissions`: requested, and declared by `<scope>.notify`) and a `title`."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import stat
import sys
import zipfile
from pathlib import Path
from typing import Any, Final

import trio

from lineup.actors.focus.messages import (
    AppOperationInfo,
    RegistryInstallRequest,
    RegistryListReply,
    RegistryListRequest,
    RegistryOperateRequest,
)
from lineup.actors.kernel import Bus
from lineup.sdk import MiniApp
from lineup.sdk.bundle import MAGIC, PublicKey, SigningKey, pack
from lineup.sdk.manifest import Manifest
from lineup.sdk.tools import manifest_of
from lineup.sdk.trust import TrustStore
from lineup.tests.support.delivery_runtime import delivery_specs
from lineup.tests.support.runtime import Runtime, supervise
from lineup.tests.support.tree import until_answered

PACKAGE = "deliverapp"
WAIT: Final = 30.0

_SOURCE = '''"""A tiny installed MiniApp: one launch tool that answers with its own version."""

from __future__ import annotations

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool
from lineup.sdk.manifest import Entrypoint

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
    app_info = AppInfo(
        app_scope="{scope}",
        title={title},
        version=VERSION,
        kind="installed",
        entrypoints={entrypoints},
        requested_capabilities={permissions},
    )

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

# A Surface: `open` opens the instance's `board` (its id is the answer's text).
_ENTRYPOINTS = '(Entrypoint(id="board", kind="surface", document="index.html"),)'
_OPEN = """
    @tool("{scope}.open", handling="launch", input=EchoInput, output=EchoOutput, timeout_ms=20_000)
    async def open(self, call: ToolCall[EchoInput]) -> EchoOutput:
        reply = await self.app.surfaces.request_open(call.instance_id)
        return EchoOutput(text=reply.surface_id[:100], version=VERSION)
"""
SURFACE_DOCUMENT = "<!doctype html><title>deliver {version}</title><p>board {version}</p>\n"

# A tool that declares the capabilities the app requests (the inventory's filter).
_NOTIFY = """
    @tool(
        "{scope}.notify",
        handling="launch",
        input=EchoInput,
        output=EchoOutput,
        timeout_ms=5_000,
        permissions={permissions},
    )
    async def notify(self, call: ToolCall[EchoInput]) -> EchoOutput:
        return EchoOutput(text=call.input.text, version=VERSION)
"""


def write_package(
    folder: Path,
    *,
    scope: str,
    version: str,
    shout: bool = False,
    surface: bool = False,
    permissions: tuple[str, ...] = (),
    title: str | None = None,
) -> Path:
    """The app's package `folder/deliverapp/` for `version` (see the module for the options)."""
    package = folder / PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    extra = _EXTRA.format(scope=scope) if shout else ""
    if surface:
        extra += _OPEN.format(scope=scope)
        (package / "web").mkdir(exist_ok=True)
        (package / "web" / "index.html").write_text(SURFACE_DOCUMENT.format(version=version))
    if permissions:
        extra += _NOTIFY.format(scope=scope, permissions=repr(tuple(permissions)))
    source = _SOURCE.format(
        scope=scope,
        version=version,
        extra=extra,
        entrypoints=_ENTRYPOINTS if surface else "()",
        permissions=repr(tuple(permissions)),
        title=repr(title),
    )
    (package / "__init__.py").write_text(source)
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
    surface: bool = False,
    permissions: tuple[str, ...] = (),
    title: str | None = None,
) -> bytes:
    package = write_package(
        folder / f"{scope}-{version}",
        scope=scope,
        version=version,
        shout=shout,
        surface=surface,
        permissions=permissions,
        title=title,
    )
    manifest = manifest_for(package)
    return pack(package, manifest, key, min_host_version=min_host_version)


def trust(data_dir: Path, key: PublicKey) -> None:
    """Add `key` to the data dir's trusted keys (what `lineup app trust` does)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    TrustStore(data_dir).add(key)


def write_catalog(folder: Path, key: SigningKey, bundles: dict[str, bytes]) -> Path:
    """A local catalog folder (`lineup run --catalog`): `bundles` by file name, and the
    signer's public key as `make run`'s builder leaves it (`<name>.pub`)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lineup-dev.pub").write_text(key.public.dumps())
    for name, data in bundles.items():
        (folder / name).write_bytes(data)
    return folder


def flip_byte(data: bytes) -> bytes:
    """`data` with one bit of one byte of its payload flipped (a digest mismatch)."""
    at = len(data) - 100
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def with_entry(data: bytes, key: SigningKey, name: str, body: bytes) -> bytes:
    """`data` with one more payload file (`name`, which `pack` would refuse), its header made
    true again and signed by `key`: a hostile bundle a trusted key signed."""
    header, entries = _opened(data)
    return _signed(header, {**entries, name: body}, key)


def with_manifest(data: bytes, key: SigningKey, manifest: dict[str, Any]) -> bytes:
    """`data` with `manifest` (a dict no `Manifest` may have checked) for its manifest, the
    header naming its scope, version and capabilities, signed by `key`."""
    header, entries = _opened(data)
    scope, version = manifest["app_scope"], manifest["version"]
    header.update(
        app_scope=scope,
        version=version,
        artifact_id=f"{scope}@{version}",
        permissions=list(manifest.get("requested_capabilities", [])),
    )
    return _signed(header, {**entries, "manifest.json": json.dumps(manifest).encode()}, key)


def manifest_in(data: bytes) -> dict[str, Any]:
    """The manifest a bundle carries, as a dict."""
    _, entries = _opened(data)
    manifest: dict[str, Any] = json.loads(entries["manifest.json"])
    return manifest


def _opened(data: bytes) -> tuple[dict[str, Any], dict[str, bytes]]:
    start = len(MAGIC) + 4
    end = start + int.from_bytes(data[len(MAGIC) : start], "big")
    header: dict[str, Any] = json.loads(data[start:end])
    del header["signature"]
    with zipfile.ZipFile(io.BytesIO(data[end:])) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    return header, entries


def _signed(header: dict[str, Any], entries: dict[str, bytes], key: SigningKey) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, body in entries.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, body)
    payload = buffer.getvalue()
    header = {**header, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
    signature = base64.b64encode(key.sign(_canonical(header))).decode()
    signed = _canonical({**header, "signature": signature})
    return MAGIC + len(signed).to_bytes(4, "big") + signed + payload


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


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


# ------------------------------------------------------------------ a runtime to install into


async def start_delivery(
    nursery: trio.Nursery, data_dir: Path, *, catalog: Path | None = None, **focus: Any
) -> Runtime:
    """The runtime of `delivery_specs` in this process, forking from the shared zygote."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    plan, specs = delivery_specs(data_dir, catalog=catalog, **focus)
    supervisor = await supervise(nursery, plan, data_dir, specs)
    return Runtime(supervisor, plan.shell_url, plan.appserver_url)


async def install(bus: Bus, operation_id: str, data: bytes | None = None, **source: str) -> Any:
    """focus.registry.install of `data` (base64) or of `source` (`url=`, `path=`)."""
    if data is not None:
        source = {"bundle_b64": base64.b64encode(data).decode()}
    request = RegistryInstallRequest(operation_id=operation_id, **source)
    with trio.fail_after(WAIT):
        return await bus.request("focus", request, expect=AppOperationInfo, timeout=WAIT)


async def operate(bus: Bus, operation_id: str, kind: str, scope: str, **kw: Any) -> Any:
    request = RegistryOperateRequest(operation_id=operation_id, kind=kind, app_scope=scope, **kw)
    with trio.fail_after(WAIT):
        return await bus.request("focus", request, expect=AppOperationInfo, timeout=WAIT)


async def listing(bus: Bus) -> RegistryListReply:
    reply: RegistryListReply = await until_answered(
        lambda: bus.request("focus", RegistryListRequest(), expect=RegistryListReply)
    )
    return reply


def app_of(reply: RegistryListReply, scope: str) -> Any:
    return next((a for a in reply.apps if a.app_scope == scope), None)
