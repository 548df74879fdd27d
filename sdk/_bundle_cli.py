"""`lineup app keygen | pack | verify | trust`: the author's side of app delivery (seed 000 §9).

None of these needs a running runtime, and none opens its database:

    keygen --out KEY            an Ed25519 pair: KEY (private, 0600, never overwritten) and
                                KEY.pub; prints the key_id
    pack DIR --key KEY --out F  the signed bundle of the MiniApp package DIR (its manifest
                                generated from its code, as `lineup app manifest DIR`)
    verify F [--data-dir D] [--key K.pub ...]
                                whether F would install on this host, and if not, why
    trust K.pub [--data-dir D]  adds K to the data dir's trusted-keys.json
    trust --list [--data-dir D] [--json]

`pack` and `verify` print one line, `<app_scope> <version> <size> bytes sha256 <hex> key
<key_id>` (size and SHA-256 of the payload, as signed: the runtime records that digest), `verify`
prefixed `ok ` or replaced by `refused: <code> (<why>)` with exit status 1. Any other refusal is
one line on stderr, `lineup app <command>: <reason> <detail>`, exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any, Final

from lineup import __version__
from lineup.actors.kernel.errors import ErrorCode, LineUpError

from ._cli_support import Refused, app_class, refuse
from .bundle import BundleRefused, PublicKey, SigningKey, pack, read_header, verify_bundle
from .manifest import Manifest
from .tools import manifest_of
from .trust import TrustStore, default_data_dir

__all__ = ["COMMANDS", "add_commands", "describe", "replace_file", "run", "signing_key"]

COMMANDS: Final = ("keygen", "pack", "verify", "trust")
PUBLIC_SUFFIX: Final = ".pub"
MAX_BUNDLE_READ: Final = 256 * 1024 * 1024  # far above what verify accepts unpacked
_KEY_MODE: Final = 0o600
_PUBLIC_MODE: Final = 0o644
_BUNDLE_MODE: Final = 0o644

_VERIFY_NOTE = (
    "Checks the signature against the trusted keys, the exact size and SHA-256, the minimum "
    f"host version (this is LineUp {__version__}), the payload's safety and the app's manifest "
    "and SDK. It does not consult the revocation list of a runtime: a version revoked there "
    "still verifies here."
)


def add_commands(sub: Any) -> None:
    """Add the four commands to `lineup app`'s subparsers (`sub`)."""
    keygen = sub.add_parser("keygen", help="write a new Ed25519 signing key pair")
    keygen.add_argument("--out", metavar="KEY", type=Path, required=True, help="private key")

    pack_ = sub.add_parser("pack", help="write a MiniApp package folder as a signed bundle")
    pack_.add_argument("path", metavar="DIR", type=Path, help="the MiniApp package folder")
    pack_.add_argument("--key", metavar="KEY", type=Path, required=True, help="private key")
    pack_.add_argument("--out", metavar="FILE.lineup", type=Path, required=True)
    pack_.add_argument(
        "--min-host-version",
        metavar="V",
        default=__version__,
        help=f"the oldest LineUp that may install it (default: this one, {__version__})",
    )
    pack_.add_argument("--class", dest="app_class", metavar="module:Class")

    verify = sub.add_parser(
        "verify", help="say whether a bundle would install on this host", description=_VERIFY_NOTE
    )
    verify.add_argument("file", metavar="FILE.lineup", type=Path)
    verify.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="trust this data dir's keys (the default, $XDG_DATA_HOME/lineup, unless --key)",
    )
    verify.add_argument(
        "--key",
        dest="keys",
        metavar="KEY.pub",
        type=Path,
        action="append",
        default=[],
        help="trust this public key too; repeatable",
    )

    trust = sub.add_parser("trust", help="trust a public key for installs, or list them")
    trust.add_argument("key", metavar="KEY.pub", type=Path, nargs="?")
    trust.add_argument("--list", action="store_true", help="list the trusted keys")
    trust.add_argument("--data-dir", type=Path, default=None)
    trust.add_argument("--json", action="store_true", help="with --list: as JSON")


def run(args: argparse.Namespace) -> int:
    """Run one of `COMMANDS`; `Refused` propagates to `lineup.sdk.cli.main`."""
    if args.command == "keygen":
        return _keygen(args.out)
    if args.command == "pack":
        return _pack(args)
    if args.command == "verify":
        return _verify(args)
    return _trust(args)


# ---------------------------------------------------------------------------------- keygen


def _keygen(out: Path) -> int:
    public_path = out.with_name(out.name + PUBLIC_SUFFIX)
    for path in (out, public_path):
        if os.path.lexists(path):
            refuse("output_exists", str(path))
    key = SigningKey.generate()
    _create(out, key.dumps().encode(), _KEY_MODE)
    try:
        _create(public_path, key.public.dumps().encode(), _PUBLIC_MODE)
    except Refused:
        out.unlink(missing_ok=True)  # never leave half a pair
        raise
    print(key.key_id)
    return 0


def _create(path: Path, body: bytes, mode: int) -> None:
    """Write a new file (O_EXCL: never over another), fsynced."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        refuse("output_exists", str(path))
    except OSError as exc:
        refuse("output_not_written", f"{path}: {exc.strerror}")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(body)
            file.flush()
            os.fsync(file.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        refuse("output_not_written", f"{path}: {exc.strerror}")


# ---------------------------------------------------------------------------------- pack


def _pack(args: argparse.Namespace) -> int:
    folder: Path = args.path
    if not folder.is_dir():
        refuse("app_not_found", f"{folder}: not a package folder")
    key = signing_key(args.key)
    manifest: Manifest = manifest_of(app_class(str(folder), args.app_class))
    if manifest.kind != "installed":
        refuse("app_not_installable", f"kind is {manifest.kind!r}: only 'installed' is packed")
    try:
        data = pack(folder.resolve(), manifest, key, min_host_version=args.min_host_version)
    except BundleRefused as exc:
        refuse(exc.code.value, exc.message)
    replace_file(args.out, data)
    print(describe(data))
    return 0


def signing_key(path: Path) -> SigningKey:
    """The private key in `path`; `Refused` (key_not_found, key_invalid) otherwise."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        refuse("key_not_found", f"{path}: {exc.strerror}")
    try:
        return SigningKey.loads(text)
    except BundleRefused:
        refuse("key_invalid", f"{path}: not a lineup private key")


def replace_file(path: Path, data: bytes) -> None:
    """Write `path` atomically: a temporary file beside it, fsync, rename, fsync the folder."""
    folder = path.parent
    tmp = folder / f".{path.name}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _BUNDLE_MODE)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        refuse("output_not_written", f"{path}: {exc.strerror}")


def describe(data: bytes) -> str:
    """The one line `pack` prints of a bundle (the module's docstring)."""
    signed, _ = read_header(data)
    return (
        f"{signed.app_scope} {signed.version} {signed.size} bytes sha256 {signed.sha256} "
        f"key {signed.key_id}"
    )


# ---------------------------------------------------------------------------------- verify


def _verify(args: argparse.Namespace) -> int:
    trusted: dict[str, bytes] = {}
    for path in args.keys:
        key = _public_key(path)
        trusted[key.key_id] = key.key
    if args.data_dir is not None or not args.keys:
        trusted.update(_trusted_keys(_store(args.data_dir)))
    try:
        with open(args.file, "rb") as file:
            data = file.read(MAX_BUNDLE_READ + 1)
    except OSError as exc:
        refuse("file_not_found", f"{args.file}: {exc.strerror}")
    try:
        if len(data) > MAX_BUNDLE_READ:
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "too large")
        verify_bundle(data, trusted=trusted, host_version=__version__)
    except BundleRefused as exc:
        print(f"refused: {exc.code.value} ({exc.message})".replace("\n", " "))
        return 1
    print("ok " + describe(data))
    return 0


def _public_key(path: Path) -> PublicKey:
    try:
        text = path.read_bytes()
    except OSError as exc:
        refuse("key_not_found", f"{path}: {exc.strerror}")
    try:
        return PublicKey.loads(text)
    except BundleRefused:
        refuse("key_invalid", f"{path}: not a lineup public key")


def _store(data_dir: Path | None) -> TrustStore:
    return TrustStore((data_dir or default_data_dir()).absolute())


# ---------------------------------------------------------------------------------- trust


def _trusted_keys(store: TrustStore) -> dict[str, bytes]:
    try:
        return store.keys()
    except LineUpError as exc:  # a corrupt file: nothing in it is trusted
        refuse("trusted_keys_corrupt", exc.message)


def _trust(args: argparse.Namespace) -> int:
    if args.list == (args.key is not None) or (args.json and not args.list):
        print("lineup app trust: error: give either KEY.pub or --list [--json]", file=sys.stderr)
        return 2
    store = _store(args.data_dir)
    if args.list:
        try:
            entries = store.list()
        except LineUpError as exc:
            refuse("trusted_keys_corrupt", exc.message)
        if args.json:
            body = [{"key_id": e.key_id, "added_at": e.added_at} for e in entries]
            print(json.dumps({"keys": body}, sort_keys=True))
        else:
            for entry in entries:
                print(f"{entry.key_id} {entry.added_at}")
        return 0
    key = _public_key(args.key)
    try:
        added = store.add(key)
    except LineUpError as exc:
        refuse("trusted_keys_corrupt", exc.message)
    except OSError as exc:
        refuse("output_not_written", f"{store.path}: {exc.strerror}")
    print(key.key_id if added else f"{key.key_id} already trusted")
    return 0
