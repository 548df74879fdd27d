"""Signed bundles: each refusal code from a bundle built here and tampered in exactly one way,
the unsafe ZIPs, and packing that is reproducible and carries nothing executable in its header."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import stat
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup import __version__
from lineup.actors.kernel import ErrorCode
from lineup.sdk.bundle import (
    MAGIC,
    MAX_BUNDLE_FILES,
    MAX_PATH,
    MAX_PATH_PART,
    BundleRefused,
    PublicKey,
    SigningKey,
    VerifiedBundle,
    compare_versions,
    pack,
    read_header,
    verify_bundle,
)
from lineup.sdk.manifest import Manifest, load_manifest, manifest_json

SCOPE = "pinger"
VERSION = "1.2.0"
# The contract's signed manifest, and nothing else (seed 000 §9.2: no URL, HTML, CSS, JS).
HEADER_KEYS = {
    "format",
    "app_scope",
    "version",
    "artifact_id",
    "size",
    "sha256",
    "min_host_version",
    "permissions",
    "key_id",
    "signature",
}
INIT = b"from lineup.sdk import MiniApp\n"
PAGE = b"<!doctype html><script src='app.js'></script>\n"


def manifest_dict(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "format": "lineup.app.v1",
        "app_scope": SCOPE,
        "version": VERSION,
        "kind": "installed",
        "host": {"min_version": "0.1"},
        "requested_capabilities": ["notification.show"],
        "entrypoints": [{"id": "main", "kind": "surface"}],
    }
    raw.update(changes)
    return raw


def a_manifest(**changes: Any) -> Manifest:
    return load_manifest(manifest_dict(**changes))


def write_app(root: Path, name: str = "pingapp") -> Path:
    folder = root / name
    (folder / "web").mkdir(parents=True)
    (folder / "__init__.py").write_bytes(INIT)
    (folder / "web" / "index.html").write_bytes(PAGE)
    (folder / "web" / "app.js").write_bytes(b"console.log('hi')\n")
    return folder


@pytest.fixture
def key() -> SigningKey:
    return SigningKey.generate()


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    return write_app(tmp_path)


@pytest.fixture
def bundle(app_dir: Path, key: SigningKey) -> bytes:
    return pack(app_dir, a_manifest(), key, min_host_version="0.1")


def trust(*keys: SigningKey) -> dict[str, bytes]:
    return {k.key_id: k.public.key for k in keys}


def verify(data: bytes, key: SigningKey, **kwargs: Any) -> VerifiedBundle:
    return verify_bundle(data, trusted=trust(key), host_version=__version__, **kwargs)


def refusal(data: bytes, key: SigningKey, **kwargs: Any) -> ErrorCode:
    with pytest.raises(BundleRefused) as exc:
        verify(data, key, **kwargs)
    return exc.value.code


def split(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header as JSON and the payload (read by hand, not by the code under test)."""
    length = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "big")
    header = json.loads(data[len(MAGIC) + 4 : len(MAGIC) + 4 + length])
    return header, data[len(MAGIC) + 4 + length :]


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def assemble(
    payload: bytes,
    key: SigningKey,
    *,
    sign_with: SigningKey | None = None,
    **changes: Any,
) -> bytes:
    """A bundle of `payload` whose header is signed (by `sign_with`, else `key`) over the true
    size and digest, then `changes`; `key_id` is `key`'s unless changed."""
    unsigned: dict[str, Any] = {
        "format": "lineup.bundle.v1",
        "app_scope": SCOPE,
        "version": VERSION,
        "artifact_id": f"{SCOPE}@{VERSION}",
        "size": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "min_host_version": "0.1",
        "permissions": ["notification.show"],
        "key_id": key.key_id,
    }
    unsigned.update(changes)
    signature = (sign_with or key).sign(canonical(unsigned))
    header = canonical({**unsigned, "signature": base64.b64encode(signature).decode()})
    return MAGIC + len(header).to_bytes(4, "big") + header + payload


def resign(data: bytes, key: SigningKey, **changes: Any) -> bytes:
    """`data` with its header changed and signed again (the payload untouched)."""
    header, payload = split(data)
    del header["signature"]
    header.update(changes)
    signature = base64.b64encode(key.sign(canonical(header))).decode()
    body = canonical({**header, "signature": signature})
    return MAGIC + len(body).to_bytes(4, "big") + body + payload


def zip_of(
    entries: dict[str, bytes] | list[tuple[str, bytes]],
    *,
    edit: Callable[[zipfile.ZipInfo], None] | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    buffer = io.BytesIO()
    items = entries.items() if isinstance(entries, dict) else entries
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name, which we want
        with zipfile.ZipFile(buffer, "w", compression) as archive:
            for name, body in items:
                info = zipfile.ZipInfo(name)
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                info.compress_type = compression
                if edit is not None:
                    edit(info)
                archive.writestr(info, body)
    return buffer.getvalue()


def good_entries(**manifest_changes: Any) -> dict[str, bytes]:
    text = manifest_json(a_manifest(**manifest_changes)) if manifest_changes else None
    return {
        "manifest.json": (text or manifest_json(a_manifest())).encode(),
        "app/pingapp/__init__.py": INIT,
        "app/pingapp/web/index.html": PAGE,
    }


# ------------------------------------------------------------------------------------- accepted


def test_a_packed_bundle_verifies_and_holds_the_package_and_its_manifest(
    bundle: bytes, key: SigningKey
) -> None:
    verified = verify(bundle, key)
    assert verified.package == "pingapp"
    assert verified.entry == "pingapp:"
    assert verified.manifest == a_manifest()
    assert verified.manifest_text == manifest_json(a_manifest())
    assert dict(verified.files) == {
        "__init__.py": INIT,
        "web/index.html": PAGE,
        "web/app.js": b"console.log('hi')\n",
    }
    assert verified.signed.key_id == key.key_id
    assert verified.signed.artifact_id == f"{SCOPE}@{VERSION}"


def test_a_hand_assembled_bundle_of_a_good_payload_verifies(key: SigningKey) -> None:
    # The tamper tests below build on `assemble`; it must make a bundle that passes.
    assert verify(assemble(zip_of(good_entries()), key), key).package == "pingapp"


def test_the_header_holds_exactly_the_contracts_fields_and_nothing_executable(
    bundle: bytes, key: SigningKey
) -> None:
    header, payload = split(bundle)
    assert set(header) == HEADER_KEYS
    assert header["size"] == len(payload)
    assert header["sha256"] == hashlib.sha256(payload).hexdigest()
    assert header["permissions"] == ["notification.show"]
    assert header["min_host_version"] == "0.1"
    text = json.dumps(header).lower()
    for marker in ("http", "://", "<", "script", "html", ".js", "import"):
        assert marker not in text


def test_packing_the_same_package_twice_gives_the_same_bytes(
    tmp_path: Path, key: SigningKey
) -> None:
    first = pack(write_app(tmp_path / "a"), a_manifest(), key, min_host_version="0.1")
    later = write_app(tmp_path / "b")
    os.utime(later / "__init__.py", (1_000_000_000, 1_000_000_000))  # another mtime
    second = pack(later, a_manifest(), key, min_host_version="0.1")
    assert first == second


def test_pack_leaves_out_caches_hidden_files_and_bundles(app_dir: Path, key: SigningKey) -> None:
    (app_dir / "__pycache__").mkdir()
    (app_dir / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (app_dir / ".env").write_text("SECRET=1")
    (app_dir / "old.lineup").write_bytes(b"x")
    (app_dir / "stale.pyc").write_bytes(b"x")
    files = verify(pack(app_dir, a_manifest(), key, min_host_version="0.1"), key).files
    assert set(files) == {"__init__.py", "web/index.html", "web/app.js"}


@pytest.mark.parametrize(
    ("a", "b", "order"),
    [("0.1", "0.1.0", 0), ("0.2", "0.10", -1), ("1.0.1", "1.0", 1), ("2", "10", -1)],
)
def test_versions_compare_as_numbers(a: str, b: str, order: int) -> None:
    assert compare_versions(a, b) == order
    assert compare_versions(b, a) == -order


# --------------------------------------------------------------------------------- pack refuses


def test_pack_refuses_an_app_that_is_not_installed_kind(app_dir: Path, key: SigningKey) -> None:
    with pytest.raises(BundleRefused) as exc:
        pack(app_dir, a_manifest(kind="bundled-reference"), key, min_host_version="0.1")
    assert exc.value.code is ErrorCode.BUNDLE_MALFORMED


def an_mcp_manifest() -> Manifest:
    return load_manifest(
        {
            "format": "lineup.app.v1",
            "app_scope": SCOPE,
            "version": VERSION,
            "kind": "mcp",
            "mcp": {"command": ["node", "node_modules/@scope/server/index.js"]},
        }
    )


def test_an_mcp_server_s_folder_packs_with_node_modules_and_verifies_without_init_py(
    tmp_path: Path, key: SigningKey
) -> None:
    folder = tmp_path / "server"
    entry = folder / "node_modules" / "@scope" / "server" / "index.js"
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"console.log('hi')\n")
    (folder / "node_modules" / ".bin").mkdir()
    (folder / "node_modules" / ".bin" / "server").symlink_to(entry)  # hidden: left out
    (folder / "mcp-lock.json").write_bytes(b"{}\n")
    bundle = verify(pack(folder, an_mcp_manifest(), key, min_host_version="0.1"), key)
    assert (bundle.package, bundle.manifest.kind) == ("server", "mcp")
    assert set(bundle.files) == {"node_modules/@scope/server/index.js", "mcp-lock.json"}


def test_an_installed_app_still_leaves_node_modules_out(app_dir: Path, key: SigningKey) -> None:
    (app_dir / "node_modules").mkdir()
    (app_dir / "node_modules" / "x.js").write_bytes(b"")
    bundle = verify(pack(app_dir, a_manifest(), key, min_host_version="0.1"), key)
    assert not any(name.startswith("node_modules") for name in bundle.files)


def test_pack_refuses_a_path_too_long_to_unpack(app_dir: Path, key: SigningKey) -> None:
    (app_dir / ("a" * 200 + ".py")).write_text("")
    with pytest.raises(BundleRefused) as exc:
        pack(app_dir, a_manifest(), key, min_host_version="0.1")
    assert exc.value.code is ErrorCode.BUNDLE_MALFORMED


def deep_file(app_dir: Path, length: int) -> str:
    """A file in `app_dir` whose payload path (`app/<package>/…`) is `length` characters, in
    folders whose names are as long as verification takes; returns that path."""
    prefix = f"app/{app_dir.name}/"
    parts: list[str] = []
    left = length - len(prefix)
    while left > MAX_PATH_PART:
        parts.append("d" * min(MAX_PATH_PART, left - 5))  # room left for a file name
        left -= len(parts[-1]) + 1
    parts.append("f" * (left - 3) + ".js")
    path = app_dir.joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    name = prefix + "/".join(parts)
    assert len(name) == length and max(len(p) for p in name.split("/")) <= MAX_PATH_PART
    return name


def test_pack_takes_the_longest_path_verification_takes(app_dir: Path, key: SigningKey) -> None:
    name = deep_file(app_dir, MAX_PATH)
    data = pack(app_dir, a_manifest(), key, min_host_version="0.1")
    verified = verify_bundle(data, trusted=trust(key), host_version=__version__)
    assert name.removeprefix(f"app/{app_dir.name}/") in verified.files


def test_pack_refuses_a_path_longer_than_verification_takes_in_parts_it_takes(
    app_dir: Path, key: SigningKey
) -> None:
    deep_file(app_dir, MAX_PATH + 1)
    with pytest.raises(BundleRefused) as exc:
        pack(app_dir, a_manifest(), key, min_host_version="0.1")
    assert exc.value.code is ErrorCode.BUNDLE_MALFORMED


def test_pack_refuses_a_link_in_the_package(app_dir: Path, key: SigningKey) -> None:
    (app_dir / "web" / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(BundleRefused) as exc:
        pack(app_dir, a_manifest(), key, min_host_version="0.1")
    assert exc.value.code is ErrorCode.BUNDLE_MALFORMED


@pytest.mark.parametrize("version", ["..", "1/2", ".1", "1 0"])
def test_pack_refuses_a_version_that_is_not_one_plain_folder_name(
    app_dir: Path, key: SigningKey, version: str
) -> None:
    with pytest.raises(BundleRefused) as exc:
        pack(app_dir, a_manifest(version=version), key, min_host_version="0.1")
    assert exc.value.code is ErrorCode.BUNDLE_MALFORMED


# ----------------------------------------------------------------------------- one flipped byte


def test_one_flipped_payload_byte_is_a_digest_mismatch(bundle: bytes, key: SigningKey) -> None:
    _, payload = split(bundle)
    at = len(bundle) - len(payload) // 2
    tampered = bundle[:at] + bytes([bundle[at] ^ 0x01]) + bundle[at + 1 :]
    assert refusal(tampered, key) is ErrorCode.DIGEST_MISMATCH


def test_one_flipped_hex_digit_of_the_signed_digest_is_a_signature_failure(
    bundle: bytes, key: SigningKey
) -> None:
    header, _ = split(bundle)
    digest = header["sha256"].encode()
    at = bundle.index(digest)
    new = b"0" if digest[:1] != b"0" else b"1"  # still 64 hex digits: a well-formed header
    tampered = bundle[:at] + new + bundle[at + 1 :]
    assert refusal(tampered, key) is ErrorCode.SIGNATURE_INVALID


def test_one_flipped_byte_of_the_headers_syntax_is_malformed(
    bundle: bytes, key: SigningKey
) -> None:
    at = len(MAGIC) + 4  # the header's opening brace
    tampered = bundle[:at] + b"[" + bundle[at + 1 :]
    assert refusal(tampered, key) is ErrorCode.BUNDLE_MALFORMED


def test_one_flipped_byte_of_the_magic_or_the_length_is_malformed(
    bundle: bytes, key: SigningKey
) -> None:
    for at in (0, len(MAGIC) - 1, len(MAGIC), len(MAGIC) + 3):
        tampered = bundle[:at] + bytes([bundle[at] ^ 0x40]) + bundle[at + 1 :]
        assert refusal(tampered, key) is ErrorCode.BUNDLE_MALFORMED


def test_the_signatures_last_base64_character_cannot_be_swapped_for_one_that_decodes_alike(
    bundle: bytes, key: SigningKey
) -> None:
    header, _ = split(bundle)
    signature = header["signature"]
    assert signature.endswith("==")  # 64 bytes: the last character carries 4 unused bits
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = alphabet.index(signature[-3])
    twin = alphabet[last ^ 0x01]  # only an unused bit differs
    forged = signature[:-3] + twin + "=="
    assert base64.b64decode(forged) == base64.b64decode(signature)
    at = bundle.index(signature.encode()) + len(signature) - 3
    tampered = bundle[:at] + twin.encode() + bundle[at + 1 :]
    assert refusal(tampered, key) is ErrorCode.SIGNATURE_INVALID


def test_a_header_that_is_not_canonical_json_is_malformed(bundle: bytes, key: SigningKey) -> None:
    header, payload = split(bundle)
    spaced = json.dumps(header, sort_keys=True).encode()  # ", " and ": "
    tampered = MAGIC + len(spaced).to_bytes(4, "big") + spaced + payload
    assert refusal(tampered, key) is ErrorCode.BUNDLE_MALFORMED


def _single_byte_flips() -> st.SearchStrategy[tuple[float, int]]:
    return st.tuples(st.floats(min_value=0, max_value=1, exclude_max=True), st.integers(1, 255))


_PROPERTY_KEY = SigningKey.generate()
with tempfile.TemporaryDirectory() as _folder:
    _PROPERTY_BUNDLE = pack(
        write_app(Path(_folder)), a_manifest(), _PROPERTY_KEY, min_host_version="0.1"
    )
_HEADER_END = len(_PROPERTY_BUNDLE) - len(split(_PROPERTY_BUNDLE)[1])


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.just("header"), st.just("anywhere")), _single_byte_flips())
def test_flipping_any_single_byte_of_a_valid_bundle_is_refused(
    region: str, flip: tuple[float, int]
) -> None:
    where, mask = flip
    span = _HEADER_END if region == "header" else len(_PROPERTY_BUNDLE)
    at = int(where * span)
    data = _PROPERTY_BUNDLE
    tampered = data[:at] + bytes([data[at] ^ mask]) + data[at + 1 :]
    with pytest.raises(BundleRefused):
        verify(tampered, _PROPERTY_KEY)


# ------------------------------------------------------------------------------ size off by one


def test_a_byte_appended_is_a_size_mismatch(bundle: bytes, key: SigningKey) -> None:
    assert refusal(bundle + b"\0", key) is ErrorCode.SIZE_MISMATCH


def test_a_byte_dropped_is_a_size_mismatch(bundle: bytes, key: SigningKey) -> None:
    assert refusal(bundle[:-1], key) is ErrorCode.SIZE_MISMATCH


def test_a_header_signed_with_size_plus_one_is_a_size_mismatch(
    bundle: bytes, key: SigningKey
) -> None:
    header, _ = split(bundle)
    assert refusal(resign(bundle, key, size=header["size"] + 1), key) is ErrorCode.SIZE_MISMATCH


# ----------------------------------------------------------------------------------------- keys


def test_a_signature_by_an_untrusted_key_is_an_unknown_key(app_dir: Path, key: SigningKey) -> None:
    stranger = SigningKey.generate()
    data = pack(app_dir, a_manifest(), stranger, min_host_version="0.1")
    assert refusal(data, key) is ErrorCode.UNKNOWN_KEY
    with pytest.raises(BundleRefused) as exc:
        verify_bundle(data, trusted={}, host_version=__version__)
    assert exc.value.code is ErrorCode.UNKNOWN_KEY


def test_a_trusted_key_id_over_another_keys_signature_is_a_signature_failure(
    bundle: bytes, key: SigningKey
) -> None:
    forger = SigningKey.generate()
    forged = resign(bundle, forger, key_id=key.key_id)
    assert refusal(forged, key) is ErrorCode.SIGNATURE_INVALID


def test_key_files_round_trip_and_refuse_a_key_id_that_is_not_the_keys() -> None:
    key = SigningKey.generate()
    assert SigningKey.loads(key.dumps()) == key
    assert PublicKey.loads(key.public.dumps()) == key.public
    raw = json.loads(key.public.dumps())
    raw["key_id"] = SigningKey.generate().key_id
    with pytest.raises(BundleRefused) as exc:
        PublicKey.loads(json.dumps(raw))
    assert exc.value.code is ErrorCode.BUNDLE_MALFORMED
    with pytest.raises(BundleRefused):
        SigningKey.loads(key.public.dumps())  # a public key is not a private one


# ----------------------------------------------------------------------------- host, revocation


def test_a_min_host_version_above_ours_is_refused(app_dir: Path, key: SigningKey) -> None:
    data = pack(app_dir, a_manifest(), key, min_host_version="99.0")
    assert refusal(data, key) is ErrorCode.HOST_VERSION_UNSUPPORTED


def test_a_min_host_version_equal_to_ours_is_accepted(app_dir: Path, key: SigningKey) -> None:
    verify(pack(app_dir, a_manifest(), key, min_host_version=__version__), key)


def test_a_revoked_version_is_refused_and_another_version_is_not(
    bundle: bytes, key: SigningKey
) -> None:
    assert refusal(bundle, key, revoked={(SCOPE, VERSION)}) is ErrorCode.REVOKED
    verify(bundle, key, revoked={(SCOPE, "1.1.0"), ("other", VERSION)})


def test_the_checks_run_in_their_documented_order(app_dir: Path, key: SigningKey) -> None:
    data = pack(app_dir, a_manifest(), key, min_host_version="99.0")
    assert refusal(data, key, revoked={(SCOPE, VERSION)}) is ErrorCode.REVOKED
    assert refusal(data + b"\0", key, revoked={(SCOPE, VERSION)}) is ErrorCode.SIZE_MISMATCH
    stranger = SigningKey.generate()
    assert (
        refusal(resign(data + b"\0", stranger, key_id=stranger.key_id), key)
        is ErrorCode.UNKNOWN_KEY
    )


# -------------------------------------------------------------------------------------- the app


@pytest.mark.parametrize(
    ("what", "changes"),
    [
        ("another version", {"version": "1.2.1"}),
        ("another scope", {"app_scope": "pongor"}),
        ("other permissions", {"requested_capabilities": ["file.open"]}),
        ("not installed", {"kind": "bundled-reference"}),
        ("sdk api 2", {"runtime_sdk": {"api_version": "2"}}),
        ("an unknown feature", {"runtime_sdk": {"required_features": ["app.teleport.v1"]}}),
    ],
)
def test_an_inner_manifest_that_is_not_the_signed_app_is_a_version_mismatch(
    key: SigningKey, what: str, changes: dict[str, Any]
) -> None:
    payload = zip_of(good_entries(**changes))
    assert refusal(assemble(payload, key), key) is ErrorCode.APP_VERSION_MISMATCH


def test_an_artifact_id_that_is_not_scope_at_version_is_a_version_mismatch(
    key: SigningKey,
) -> None:
    data = assemble(zip_of(good_entries()), key, artifact_id=f"{SCOPE}@9.9.9")
    assert refusal(data, key) is ErrorCode.APP_VERSION_MISMATCH


def test_an_optional_feature_the_host_lacks_is_accepted(key: SigningKey) -> None:
    payload = zip_of(good_entries(runtime_sdk={"optional_features": ["app.teleport.v1"]}))
    verify(assemble(payload, key), key)


# ---------------------------------------------------------------------------------- unsafe ZIPs


def _encrypted(payload: bytes) -> bytes:
    """`payload` with the 'encrypted' flag set on every entry (local and central headers)."""
    data = bytearray(payload)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at >= 0:
            data[at + offset] |= 0x01
            at = data.find(signature, at + 4)
    return bytes(data)


def _understated(payload: bytes, name: bytes) -> bytes:
    """`payload` whose central directory says `name` is 10 bytes when it is more."""
    data = bytearray(payload)
    at = data.find(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(name)] != name:
        at = data.find(b"PK\x01\x02", at + 4)
    data[at + 24 : at + 28] = (10).to_bytes(4, "little")  # uncompressed size
    return bytes(data)


def _symlink(info: zipfile.ZipInfo) -> None:
    if info.filename.endswith("link.py"):
        info.external_attr = (stat.S_IFLNK | 0o777) << 16


def _unsafe_payloads() -> Iterator[tuple[str, bytes]]:
    good = good_entries()
    yield "a ../ path", zip_of({**good, "app/pingapp/../../evil.py": b"x"})
    yield "a ../ package", zip_of({**good, "app/../evil.py": b"x"})
    yield "an absolute path", zip_of({**good, "/etc/evil.py": b"x"})
    yield "a backslash path", zip_of({**good, "app\\pingapp\\evil.py": b"x"})
    yield "a symlink entry", zip_of({**good, "app/pingapp/link.py": b"/etc/passwd"}, edit=_symlink)
    yield "an encrypted flag", _encrypted(zip_of(good))
    yield "a duplicate name", zip_of([*good.items(), ("app/pingapp/__init__.py", b"evil")])
    yield (
        "an entry larger than it claims",
        _understated(
            zip_of({**good, "app/pingapp/big.py": b"y" * 5000}, compression=zipfile.ZIP_STORED),
            b"app/pingapp/big.py",
        ),
    )
    many = {f"app/pingapp/f{i}.py": b"" for i in range(MAX_BUNDLE_FILES)}
    yield "too many files", zip_of({**good, **many})
    # Names a filesystem refuses: unpacking them would fail half-way through an install.
    yield "a 300-character path part", zip_of({**good, f"app/pingapp/{'a' * 300}.py": b"x"})
    deep = "/".join(["d" * 100] * 44)  # every part short, 4,400 characters in all
    yield "a 4,400-character path", zip_of({**good, f"app/pingapp/{deep}/x.py": b"x"})
    yield "bzip2 compression", zip_of(good, compression=zipfile.ZIP_BZIP2)
    yield "not a zip", b"PK\x03\x04 this is not a zip"
    yield "no manifest", zip_of({k: v for k, v in good.items() if k != "manifest.json"})
    yield "an invalid manifest", zip_of({**good, "manifest.json": b"{}"})
    yield "two packages", zip_of({**good, "app/other/__init__.py": b""})
    yield "a file beside the package", zip_of({**good, "README": b"hi"})
    yield "a file under app/ itself", zip_of({**good, "app/pingapp": b"x"})
    yield "a file that is also a folder", zip_of({**good, "app/pingapp/web": b"x"})
    yield "no __init__.py", zip_of({k: v for k, v in good.items() if "__init__" not in k})
    yield (
        "a package name that is not an identifier",
        zip_of({k.replace("pingapp", "ping-app"): v for k, v in good.items()}),
    )


UNSAFE = dict(_unsafe_payloads())


@pytest.mark.parametrize("payload", UNSAFE.values(), ids=UNSAFE.keys())
def test_an_unsafe_payload_is_malformed_even_when_signed(key: SigningKey, payload: bytes) -> None:
    assert refusal(assemble(payload, key), key) is ErrorCode.BUNDLE_MALFORMED


@pytest.mark.parametrize("version", ["..", ".", "a/b", "1.0/../../x", ""])
def test_a_signed_version_that_is_not_one_plain_folder_name_is_malformed(
    key: SigningKey, version: str
) -> None:
    data = assemble(zip_of(good_entries()), key, version=version)
    with pytest.raises(BundleRefused) as exc:
        read_header(data)
    assert exc.value.code is ErrorCode.BUNDLE_MALFORMED
    assert refusal(data, key) is ErrorCode.BUNDLE_MALFORMED
