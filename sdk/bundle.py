"""Signed MiniApp bundles, `lineup.bundle.v1` (seed 000 §9, §9.2; seed 004 §8.3). No I/O.

A bundle is one immutable file:

    b"LINEUP-BUNDLE-1\\n"              16 bytes, the magic
    header length                     4 bytes, big-endian
    header                            the signed manifest, UTF-8 JSON (below)
    payload                           a ZIP: `manifest.json` (the app's lineup.app.v1
                                      manifest) and `app/<package>/…` (its code, its web/;
                                      for an MCP server, kind `mcp`, the folder its command
                                      runs in, `node_modules/` included: `lineup app
                                      pack-mcp`)

The signed manifest says exactly what the payload must be and who vouches for it, and nothing
else: no URL, HTML, CSS, JS or source.

    {"format": "lineup.bundle.v1", "app_scope", "version", "artifact_id": "<scope>@<version>",
     "size": <payload bytes>, "sha256": <payload hex>, "min_host_version", "permissions":
     <the manifest's requested_capabilities>, "key_id": "ed25519:<16 hex>", "signature":
     <base64 Ed25519 signature of every other field, as canonical JSON>}

`verify_bundle` checks, in memory and in this order, and the first failure is the refusal:

    bundle_malformed          not a bundle: the magic, the header, its JSON (which must be
                              the canonical form `pack` writes) or its fields (`version` is
                              one plain folder name: it names the verified cache's folder)
    unknown_key               `key_id` is not one of the trusted keys
    signature_invalid         the signature does not verify with that key (or is not
                              canonical base64)
    size_mismatch             the payload's length is not `size`
    digest_mismatch           the payload's SHA-256 is not `sha256`
    revoked                   that app_scope + version is revoked
    host_version_unsupported  `min_host_version` is above this host's
    bundle_malformed          the payload is not a safe ZIP (paths and their lengths, links,
                              sizes, counts, encryption, compression, a file that is also a
                              folder), or has no manifest, not one package or an invalid
                              manifest
    app_protected             the manifest takes the runtime's own scope or asks a power
                              that is one resident app's (`scope_reserved`,
                              `capability_reserved`: `lineup.sdk.manifest`)
    app_version_mismatch      the inner manifest is not the signed app_scope, version and
                              permissions, is neither `installed` nor `mcp`, or asks an SDK
                              this host lacks
    bundle_malformed          an `installed` app's package has no `__init__.py`

Only then does the caller write anything (the verified cache, atomically). The signature covers
the header, and the header pins the payload's size and digest, so one flipped byte anywhere is
refused.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import stat
import zipfile
import zlib
from collections.abc import Mapping, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import nacl.exceptions
import nacl.signing
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts.versions import compare_versions

from .manifest import (
    MAX_MANIFEST_BYTES,
    Manifest,
    ManifestInvalid,
    incompatibility,
    load_manifest,
    manifest_json,
)

__all__ = [
    "BUNDLED_KINDS",
    "BUNDLE_FORMAT",
    "MAGIC",
    "MAX_BUNDLE_FILES",
    "MAX_BUNDLE_FILE_BYTES",
    "MAX_BUNDLE_UNPACKED_BYTES",
    "BundleRefused",
    "PublicKey",
    "SignedManifest",
    "SigningKey",
    "VerifiedBundle",
    "compare_versions",
    "key_id_of",
    "pack",
    "read_header",
    "verify_bundle",
]

MAGIC: Final = b"LINEUP-BUNDLE-1\n"
BUNDLE_FORMAT: Final = "lineup.bundle.v1"
PRIVATE_KEY_FORMAT: Final = "lineup.key.v1"
PUBLIC_KEY_FORMAT: Final = "lineup.pubkey.v1"
MAX_HEADER_BYTES: Final = 64 * 1024
MAX_BUNDLE_FILES: Final = 2_000
MAX_BUNDLE_FILE_BYTES: Final = 8 * 1024 * 1024
MAX_BUNDLE_UNPACKED_BYTES: Final = 64 * 1024 * 1024
_ZIP_TIME: Final = (1980, 1, 1, 0, 0, 0)  # packing is reproducible: no clock in the bytes
# `@`: npm's scoped packages (`node_modules/@scope/name/…`) in an MCP server's folder.
_PATH: Final = re.compile(r"^[A-Za-z0-9_.@-]+(/[A-Za-z0-9_.@-]+)*$")
# A payload path is unpacked under `<data_dir>/bundles/<scope>/<version>/`: each of its parts
# must be a name every filesystem takes (NAME_MAX is 255 bytes), and the whole well below
# PATH_MAX (4096) with the data dir in front, so that unpacking never fails half-way.
MAX_PATH_PART: Final = 128
MAX_PATH: Final = 512
_PACKAGE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION: Final = re.compile(r"^[0-9]+(\.[0-9]+){0,3}$")
# An app version names a folder of the verified cache (`bundles/<scope>/<version>/`): one plain
# path component, never "." or "..", no separator.
_APP_VERSION: Final = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$")
_COMPRESSIONS: Final = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_SKIPPED_DIRS: Final = frozenset({"__pycache__", "node_modules"})
BUNDLED_KINDS: Final = frozenset({"installed", "mcp"})  # what a bundle may carry
_SKIPPED_SUFFIXES: Final = (".pyc", ".pyo", ".lineup")


class BundleRefused(LineUpError):
    """A bundle that must not be installed; `code` is one of the module docstring's."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(code, message)


# ---------------------------------------------------------------------------------- keys


def key_id_of(public_key: bytes) -> str:
    return "ed25519:" + hashlib.sha256(public_key).hexdigest()[:16]


@dataclass(frozen=True)
class PublicKey:
    key_id: str
    key: bytes  # 32 raw bytes

    @classmethod
    def from_bytes(cls, key: bytes) -> PublicKey:
        if len(key) != 32:
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "an Ed25519 public key is 32 bytes")
        return cls(key_id_of(key), key)

    def dumps(self) -> str:
        body = {
            "format": PUBLIC_KEY_FORMAT,
            "key_id": self.key_id,
            "public_key": base64.b64encode(self.key).decode(),
        }
        return json.dumps(body, indent=2, sort_keys=True) + "\n"

    @classmethod
    def loads(cls, text: str | bytes) -> PublicKey:
        """Raises `BundleRefused(bundle_malformed)` for anything but a public key file."""
        raw = _json_object(text, "public key")
        if raw.get("format") != PUBLIC_KEY_FORMAT or not isinstance(raw.get("public_key"), str):
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "not a lineup public key")
        key = cls.from_bytes(_b64(raw["public_key"]))
        if raw.get("key_id") != key.key_id:
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "the key_id is not the key's")
        return key


@dataclass(frozen=True)
class SigningKey:
    seed: bytes  # 32 raw bytes: the private key

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(bytes(nacl.signing.SigningKey.generate()))

    @property
    def public(self) -> PublicKey:
        return PublicKey.from_bytes(bytes(nacl.signing.SigningKey(self.seed).verify_key))

    @property
    def key_id(self) -> str:
        return self.public.key_id

    def sign(self, message: bytes) -> bytes:
        return nacl.signing.SigningKey(self.seed).sign(message).signature

    def dumps(self) -> str:
        body = {
            "format": PRIVATE_KEY_FORMAT,
            "key_id": self.key_id,
            "secret_key": base64.b64encode(self.seed).decode(),
        }
        return json.dumps(body, indent=2, sort_keys=True) + "\n"

    @classmethod
    def loads(cls, text: str | bytes) -> SigningKey:
        raw = _json_object(text, "private key")
        if raw.get("format") != PRIVATE_KEY_FORMAT or not isinstance(raw.get("secret_key"), str):
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "not a lineup private key")
        seed = _b64(raw["secret_key"])
        if len(seed) != 32:
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "an Ed25519 private key is 32 bytes")
        return cls(seed)


# ---------------------------------------------------------------------------------- the header


class SignedManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    format: Literal["lineup.bundle.v1"]
    app_scope: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
    version: Annotated[str, Field(pattern=_APP_VERSION.pattern)]
    artifact_id: Annotated[str, Field(min_length=1, max_length=200)]
    size: Annotated[int, Field(ge=0)]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    min_host_version: Annotated[str, Field(pattern=_VERSION.pattern)]
    permissions: tuple[Annotated[str, Field(min_length=1, max_length=128)], ...]
    key_id: Annotated[str, Field(pattern=r"^ed25519:[0-9a-f]{16}$")]
    signature: Annotated[str, Field(min_length=1, max_length=200)]

    def signed_bytes(self) -> bytes:
        """What the signature covers: every field but itself, as canonical JSON."""
        return _canonical(self.model_dump(mode="json", exclude={"signature"}))


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def read_header(data: bytes) -> tuple[SignedManifest, bytes]:
    """The signed manifest and the payload, parsed but NOT verified. Raises
    `BundleRefused(bundle_malformed)`."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "not a lineup bundle")
    at = len(MAGIC)
    length = int.from_bytes(data[at : at + 4], "big")
    if length > MAX_HEADER_BYTES or at + 4 + length > len(data):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "the header's length is wrong")
    header = data[at + 4 : at + 4 + length]
    try:
        signed = SignedManifest.model_validate(_json_object(header, "header"))
    except ValidationError:
        raise BundleRefused(
            ErrorCode.BUNDLE_MALFORMED, "the signed manifest is malformed"
        ) from None
    # One bundle has one byte form: a header re-spaced, re-escaped or with a duplicate key is
    # not one `pack` wrote.
    if header != _canonical(signed.model_dump(mode="json")):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "the header is not canonical JSON")
    return signed, data[at + 4 + length :]


# ---------------------------------------------------------------------------------- verify


@dataclass(frozen=True)
class VerifiedBundle:
    """A bundle every check passed: what may be written to the verified cache."""

    signed: SignedManifest
    manifest: Manifest
    package: str  # the one folder under `app/`: the app's import name
    files: Mapping[str, bytes]  # path under `app/<package>/` → bytes
    manifest_text: str

    @property
    def entry(self) -> str:
        return f"{self.package}:"  # what the SDK's host runs: the package's one MiniApp class


def verify_bundle(
    data: bytes,
    *,
    trusted: Mapping[str, bytes],
    host_version: str,
    revoked: Set[tuple[str, str]] = frozenset(),
) -> VerifiedBundle:
    """Check `data` in full (the module docstring's order) and return what it holds. `trusted`
    maps key_id → the 32-byte public key; `revoked` holds (app_scope, version) pairs. Raises
    `BundleRefused` with the first failure's code; never writes, never imports the app."""
    signed, payload = read_header(data)
    public = trusted.get(signed.key_id)
    if public is None:
        raise BundleRefused(ErrorCode.UNKNOWN_KEY, "signed by a key this runtime does not trust")
    signature = _b64(signed.signature)
    if base64.b64encode(signature).decode() != signed.signature:
        # base64 ignores a final character's unused bits: another text, the same signature
        raise BundleRefused(ErrorCode.SIGNATURE_INVALID, "the signature is not canonical base64")
    try:
        nacl.signing.VerifyKey(public).verify(signed.signed_bytes(), signature)
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.ValueError, ValueError):
        raise BundleRefused(ErrorCode.SIGNATURE_INVALID, "the signature does not verify") from None
    if len(payload) != signed.size:
        raise BundleRefused(ErrorCode.SIZE_MISMATCH, "the payload is not the signed size")
    if hashlib.sha256(payload).hexdigest() != signed.sha256:
        raise BundleRefused(ErrorCode.DIGEST_MISMATCH, "the payload is not the signed digest")
    if (signed.app_scope, signed.version) in revoked:
        raise BundleRefused(ErrorCode.REVOKED, "this version is revoked")
    if compare_versions(signed.min_host_version, host_version) > 0:
        raise BundleRefused(ErrorCode.HOST_VERSION_UNSUPPORTED, "needs a newer LineUp")
    entries = _unzip(payload)
    text = entries.pop("manifest.json", None)
    if text is None:
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "no manifest.json")
    packages = {name.split("/")[1] for name in entries if name.startswith("app/")}
    if (
        len(packages) != 1
        or any(not name.startswith("app/") for name in entries)
        or not _PACKAGE.match(next(iter(packages)))
    ):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "the payload holds not one package")
    package = next(iter(packages))
    prefix = f"app/{package}/"
    if any(not name.startswith(prefix) for name in entries):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "a file beside the package")
    files = {name.removeprefix(prefix): body for name, body in entries.items()}
    try:
        manifest = load_manifest(text)
    except ManifestInvalid as exc:
        if exc.reason in ("scope_reserved", "capability_reserved"):
            # The runtime's own names and powers: taken by no bundle, however signed.
            raise BundleRefused(ErrorCode.APP_PROTECTED, exc.reason) from None
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "the app's manifest is invalid") from None
    if (
        (manifest.app_scope, manifest.version) != (signed.app_scope, signed.version)
        or signed.artifact_id != f"{signed.app_scope}@{signed.version}"
        or tuple(manifest.requested_capabilities) != signed.permissions
        or manifest.kind not in BUNDLED_KINDS
        or incompatibility(manifest) is not None
    ):
        raise BundleRefused(ErrorCode.APP_VERSION_MISMATCH, "not the app the header signs")
    if manifest.kind == "installed" and "__init__.py" not in files:
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "the package has no __init__.py")
    return VerifiedBundle(signed, manifest, package, files, text.decode())


def _plain_path(name: str) -> bool:
    """A relative path of plain names, within `MAX_PATH` and `MAX_PATH_PART`."""
    return _path_problem(name) is None


def _path_problem(name: str) -> str | None:
    """Why a payload path is refused (None: it is not), as pack says it to the author."""
    if len(name) > MAX_PATH:
        return f"a path longer than {MAX_PATH} characters"
    if any(len(part) > MAX_PATH_PART for part in name.split("/")):
        return f"a path part longer than {MAX_PATH_PART} characters"
    if _PATH.match(name) is None:
        return "a path that is not plain names (A-Z a-z 0-9 _ . - @)"
    return None


def _unzip(payload: bytes) -> dict[str, bytes]:
    """Every file of the payload ZIP, refused `bundle_malformed` unless each path is relative
    and plain, no entry is a link or a device, and the counts and sizes are within bounds
    (checked on the bytes read, not only on what the ZIP claims)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(payload))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "the payload is not a ZIP") from None
    if len(infos) > MAX_BUNDLE_FILES:
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "too many files")
    files: dict[str, bytes] = {}
    total = 0
    for info in infos:
        name = info.filename
        if info.is_dir():
            continue
        mode = info.external_attr >> 16
        if (
            not _plain_path(name)
            or any(part in {".", ".."} for part in name.split("/"))
            or (mode and not stat.S_ISREG(mode))
            or info.flag_bits & 0x1  # encrypted
            or info.compress_type not in _COMPRESSIONS
            or name in files
            or info.file_size > MAX_BUNDLE_FILE_BYTES
        ):
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "an unsafe entry in the payload")
        try:
            with archive.open(info) as entry:
                body = entry.read(MAX_BUNDLE_FILE_BYTES + 1)
        except (
            zipfile.BadZipFile,
            zlib.error,
            ValueError,
            OSError,
            EOFError,
            NotImplementedError,
            RuntimeError,
        ):
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "an unreadable entry") from None
        total += len(body)
        if len(body) != info.file_size or total > MAX_BUNDLE_UNPACKED_BYTES:
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "an entry larger than it says")
        files[name] = body
    # A path that is also another's folder (`a` and `a/b`) cannot be unpacked.
    folders: set[str] = set()
    for name in files:
        parts = name.split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    if folders & files.keys():
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "a file is also a folder")
    return files


# ---------------------------------------------------------------------------------- pack


def pack(
    package_dir: Path,
    manifest: Manifest,
    key: SigningKey,
    *,
    min_host_version: str,
) -> bytes:
    """The bundle of the package in `package_dir` (its code and `web/`, without caches or
    hidden files) with `manifest` (generated from that code), signed with `key`; for an MCP
    server (kind `mcp`) `package_dir` is the folder its command runs in, `node_modules/`
    included. The same inputs give the same bytes. Raises `BundleRefused(bundle_malformed)`
    for a package this runtime would refuse (another kind, bad names, too big)."""
    if manifest.kind not in BUNDLED_KINDS:
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "only an `installed` or `mcp` app")
    if (
        not _PACKAGE.match(package_dir.name)
        or not _VERSION.match(min_host_version)
        or not _APP_VERSION.match(manifest.version)
    ):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "a package or version name is invalid")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        _add(archive, "manifest.json", manifest_json(manifest).encode())
        skipped = _SKIPPED_DIRS - {"node_modules"} if manifest.kind == "mcp" else _SKIPPED_DIRS
        for path in sorted(_package_files(package_dir, skipped)):
            relative = path.relative_to(package_dir).as_posix()
            _add(archive, f"app/{package_dir.name}/{relative}", path.read_bytes())
    payload = buffer.getvalue()
    unsigned = {
        "format": BUNDLE_FORMAT,
        "app_scope": manifest.app_scope,
        "version": manifest.version,
        "artifact_id": f"{manifest.app_scope}@{manifest.version}",
        "size": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "min_host_version": min_host_version,
        "permissions": list(manifest.requested_capabilities),
        "key_id": key.key_id,
    }
    signature = base64.b64encode(key.sign(_canonical(unsigned))).decode()
    header = _canonical({**unsigned, "signature": signature})
    return MAGIC + len(header).to_bytes(4, "big") + header + payload


def _package_files(package_dir: Path, skipped: Set[str]) -> list[Path]:
    found: list[Path] = []
    for path in package_dir.rglob("*"):
        parts = path.relative_to(package_dir).parts
        if any(part.startswith(".") or part in skipped for part in parts):
            continue
        if path.is_symlink():
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, f"a link in the package: {path}")
        if path.is_file() and not path.name.endswith(_SKIPPED_SUFFIXES):
            relative = path.relative_to(package_dir).as_posix()
            # Bounded as verification bounds it (`_unzip`), in the payload's own terms.
            problem = _path_problem(f"app/{package_dir.name}/{relative}")
            if problem is not None:
                raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, f"{problem}: {relative}")
            found.append(path)
    if len(found) + 1 > MAX_BUNDLE_FILES:  # and the manifest
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "too many files")
    sizes = [path.stat().st_size for path in found]
    if any(size > MAX_BUNDLE_FILE_BYTES for size in sizes) or sum(sizes) > (
        MAX_BUNDLE_UNPACKED_BYTES - MAX_MANIFEST_BYTES
    ):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "a file or the package is too large")
    return found


def _add(archive: zipfile.ZipFile, name: str, body: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, body)


# ---------------------------------------------------------------------------------- helpers


def _json_object(text: str | bytes, what: str) -> dict[str, Any]:
    try:
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, f"the {what} is not JSON") from None
    if not isinstance(raw, dict):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, f"the {what} is not a JSON object")
    return raw


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "not base64") from None
