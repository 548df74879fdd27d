"""The drill's installs: a signed app installed, updated, rolled back and removed under faults.

Theory of operation: before the runtime starts, `prepare` writes a tiny installed MiniApp
(`drillpkg`, one direct tool) in a few versions, packs each with `lineup app pack` under a key of
the run's own, trusts that key with `lineup app trust` (as a user would), and keeps one bundle
with a byte flipped (it must never install). During the load, `drive` does one registry
operation every few seconds, through the runtime's control socket exactly as `lineup app` does
(`focus_request`), each under an operation id of its own: an update to a later version, a
downgrade (refused), a rollback, a disable or enable, a remove, a fresh install, the tampered
bundle (every run opens with one of each that moves the versions, `OPENING`). A request that
gets no answer (focus killed or paused with it in flight) is sent again under the same id until
one comes: the registry is idempotent by operation id, so a retry never does an operation
twice. Between operations the Agent calls the app's tool, so its process is started, killed and
updated while in use.

The invariants, from the store and the data dir once the runtime has stopped (`check`):

- `installs_end_once`: every operation the drill sent is one row in the journal, `completed` or
  `failed` with a code — never `requested` or `running` — and every answer the drill got for it
  agrees with that row;
- `installed_version_whole`: the registry row's versions are the ones the journal's completed
  operations leave, replayed in order (an install or update makes its version active and the
  old one the predecessor, a rollback swaps them, a remove clears both); the active version's and
  the predecessor's cache directories each hold exactly their bundle, whose digest is the row's,
  unpacked file for file (checked here, independently of the runtime's own check);
- `no_install_leftovers`: no `.tmp-*` folder under `bundles/`, and no version directory that no
  row names.
"""

from __future__ import annotations

import hashlib
import io
import logging
import random
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple, TypeVar

import apsw
import trio

from lineup import wire
from lineup.actors.focus.messages import (
    RegistryInstallRequest,
    RegistryListRequest,
    RegistryOperateRequest,
)
from lineup.actors.kernel import LineUpError, Message
from lineup.sdk.bundle import BundleRefused, read_header
from lineup.sdk.protocol import AppOperationInfo, RegistryAppInfo, RegistryListReply
from lineup.supervisor._control import NotRunning, focus_request

from ._app_source import app_source
from ._check import Invariant
from ._exercise import QUIET_START_S, Setup, Stage, lineup_command

__all__ = ["Installs", "Journal", "Row", "Sent", "Versions", "check_installs", "replay"]

log = logging.getLogger("lineup.drill")

SCOPE: Final = "drillpkg"
VERSIONS: Final = ("1.0.0", "1.1.0", "1.2.0", "2.0.0")
TAMPERED: Final = "9.9.9"  # a version only ever offered with a byte flipped
# The first operations of every run: an install, an update, the tampered bundle, a rollback,
# a remove and an install again (from nothing).
OPENING: Final[tuple[tuple[Literal["install", "rollback", "remove"], str | None], ...]] = (
    ("install", VERSIONS[0]),
    ("install", VERSIONS[1]),
    ("install", TAMPERED),
    ("rollback", None),
    ("remove", None),
    ("install", VERSIONS[2]),
)
_REQUEST_S: Final = 30.0  # one request's bound (a paused focus answers once resumed)
_RETRY_S: Final = 0.25
# Between two operations: each changes the inventory, and an Agent whose link is faulted
# learns of a new revision late; a user does not install every second either.
_GAP_S: Final = (3.0, 7.0)
_TMP: Final = ".tmp-"
_OPEN_STATES: Final = ("requested", "running")
_GIVE_UP_S: Final = 90.0  # a request unanswered this long is left to the journal's check
M = TypeVar("M", bound=Message)
OperateKind = Literal["enable", "disable", "rollback", "remove"]


@dataclass(frozen=True)
class Sent:
    """One operation the drill asked for, and every final answer it got for it."""

    operation_id: str
    kind: str
    version: str | None
    answers: tuple[tuple[str, str | None], ...]  # (state, code) of each answer


class Row(NamedTuple):
    """One journal row, as the store keeps it."""

    state: str
    code: str | None
    version: str | None
    kind: str


class Versions(NamedTuple):
    """The app's registry row: its active version and predecessor, with their digests."""

    version: str
    sha256: str | None
    previous: str | None
    previous_sha256: str | None


@dataclass
class Journal:
    """What the runtime left: the journal's rows for the app, oldest first, and its registry
    row (None once removed), read from the store; and the cache directories on disk."""

    operations: dict[str, Row]  # by operation id
    order: list[str]  # operation ids by creation
    row: Versions | None
    version_dirs: dict[str, Path]  # version -> its cache directory
    leftovers: list[str]  # `.tmp-*` entries under bundles/

    @classmethod
    def read(cls, runtime_dir: Path) -> Journal:
        connection = apsw.Connection(
            str(runtime_dir / "lineup.db"), flags=apsw.SQLITE_OPEN_READONLY
        )
        try:
            operations: dict[str, Row] = {}
            order: list[str] = []
            for op_id, state, code, version, kind in connection.execute(
                "SELECT operation_id, state, code, version, kind FROM app_operations"
                " WHERE app_scope = ? ORDER BY created_at, rowid",
                (SCOPE,),
            ):
                operations[str(op_id)] = Row(str(state), code, version, str(kind))
                order.append(str(op_id))
            rows = list(
                connection.execute(
                    "SELECT version, bundle_sha256, previous_version, previous_bundle_sha256"
                    " FROM registry WHERE app_scope = ?",
                    (SCOPE,),
                )
            )
        finally:
            connection.close()
        bundles = runtime_dir / "bundles"
        scope_dir = bundles / SCOPE
        return cls(
            operations,
            order,
            Versions(*rows[0]) if rows else None,
            {d.name: d for d in sorted(scope_dir.iterdir())} if scope_dir.is_dir() else {},
            sorted(p.name for p in bundles.iterdir() if p.name.startswith(_TMP))
            if bundles.is_dir()
            else [],
        )


def replay(journal: Journal) -> tuple[str | None, str | None]:
    """The (active, predecessor) versions the journal's completed operations leave."""
    active: str | None = None
    previous: str | None = None
    for op_id in journal.order:
        row = journal.operations[op_id]
        if row.state != "completed":
            continue
        if row.kind in ("install", "update") and row.version is not None:
            active, previous = row.version, active
        elif row.kind == "rollback":
            active, previous = previous, active
        elif row.kind == "remove":
            active = previous = None
    return active, previous


def check_installs(sent: list[Sent], journal: Journal) -> list[Invariant]:
    return [_ended_once(sent, journal), _version_whole(journal), _no_leftovers(journal)]


def _ended_once(sent: list[Sent], journal: Journal) -> Invariant:
    rule = Invariant(
        "installs_end_once",
        "every registry operation the drill sent is one journal row, completed or failed with a "
        "code, never left running, and every answer the drill got agrees with it",
    )
    for op in sent:
        row = journal.operations.get(op.operation_id)
        if row is None:
            rule.breach(f"{op.operation_id}: no row")
            continue
        ended = (row.state, row.code)
        if row.state not in ("completed", "failed") or (row.state == "failed") != (
            row.code is not None
        ):
            rule.breach(f"{op.operation_id}: {row.state} ({row.code})")
        for answer in op.answers:
            if answer != ended:
                rule.breach(f"{op.operation_id}: answered {answer}, journal {ended}")
    for op_id, row in journal.operations.items():
        if row.state in _OPEN_STATES:
            rule.breach(f"{op_id}: left {row.state}")
    return rule


def _version_whole(journal: Journal) -> Invariant:
    rule = Invariant(
        "installed_version_whole",
        "the registry's active version and predecessor are the ones the journal's completed "
        "operations leave, and each one's cache holds exactly its verified bundle",
    )
    active, previous = replay(journal)
    if journal.row is None:
        if active is not None:
            rule.breach(f"no registry row, the journal says {active} is active")
        return rule
    got = journal.row
    if (got.version, got.previous) != (active, previous):
        rule.breach(f"registry {got.version}/{got.previous}, the journal says {active}/{previous}")
    for name, digest in ((got.version, got.sha256), (got.previous, got.previous_sha256)):
        if name is None:
            continue
        where = journal.version_dirs.get(name)
        problem = "no cache directory" if where is None else bundle_problem(where, name, digest)
        if problem is not None:
            rule.breach(f"{name}: {problem}")
    return rule


def _no_leftovers(journal: Journal) -> Invariant:
    rule = Invariant(
        "no_install_leftovers",
        "no temporary folder under bundles/, and no cache directory that no registry row names",
    )
    for name in journal.leftovers:
        rule.breach(f"bundles/{name}")
    row = journal.row
    named = set() if row is None else {v for v in (row.version, row.previous) if v is not None}
    for version in journal.version_dirs.keys() - named:
        rule.breach(f"bundles/{SCOPE}/{version}: named by no row")
    return rule


def bundle_problem(where: Path, version: str, digest: str | None) -> str | None:
    """What is wrong with the cache directory of `version`, or None when it holds exactly its
    bundle: the header's digest is the row's, the payload hashes to it, and `app/` is the
    payload's files, byte for byte."""
    try:
        signed, payload = read_header((where / "bundle.lineup").read_bytes())
    except (OSError, BundleRefused) as exc:
        return f"no readable bundle ({type(exc).__name__})"
    if (signed.app_scope, signed.version) != (SCOPE, version):
        return f"the bundle of {signed.app_scope} {signed.version}"
    if signed.sha256 != digest or hashlib.sha256(payload).hexdigest() != digest:
        return "digest mismatch"
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        expected = {
            info.filename[len("app/") :]: archive.read(info)
            for info in archive.infolist()
            if info.filename.startswith("app/") and not info.is_dir()
        }
    root = where / "app"
    present = {
        path.relative_to(root).as_posix(): path
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    if set(present) != set(expected):
        return f"files {sorted(set(present) ^ set(expected))[:3]} differ"
    for name, path in present.items():
        if path.read_bytes() != expected[name]:
            return f"{name} differs"
    return None


@dataclass
class Installs:
    """The exercise (see the module's docstring)."""

    seed: int
    name: str = "installs"
    bundles: dict[str, Path] = field(default_factory=dict)  # version -> its bundle file
    sent: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    kinds: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> kind, version
    retries: int = 0
    calls: int = 0
    _asking: int = 0  # requests to focus in flight

    # ------------------------------------------------------------------ before the start

    def prepare(self, setup: Setup) -> list[str]:
        folder = setup.data_dir / "installs"
        folder.mkdir(parents=True, exist_ok=True)
        key = folder / "drill.key"
        lineup_command("app", "keygen", "--out", str(key))
        lineup_command("app", "trust", "--data-dir", str(setup.runtime_dir), str(key) + ".pub")
        for version in (*VERSIONS, TAMPERED):
            package = folder / f"src-{version}" / SCOPE
            package.mkdir(parents=True, exist_ok=True)
            doc = f"The drill's installable MiniApp, version {version}."
            (package / "__init__.py").write_text(app_source(doc, SCOPE, version))
            out = folder / f"{SCOPE}-{version}.lineup"
            lineup_command("app", "pack", "--key", str(key), "--out", str(out), str(package))
            self.bundles[version] = out
        tampered = bytearray(self.bundles[TAMPERED].read_bytes())
        tampered[-10] ^= 0xFF  # in the payload: its digest no longer matches
        self.bundles[TAMPERED].write_bytes(bytes(tampered))
        return []

    # ------------------------------------------------------------------ the load

    async def drive(self, stage: Stage, seconds: float) -> None:
        rng = random.Random(self.seed + 17)
        deadline = trio.current_time() + seconds
        await stage.agent.inventory_known()
        await trio.sleep(QUIET_START_S)
        n = 0
        while trio.current_time() < deadline:
            listed = await self._ask(stage, RegistryListRequest(), RegistryListReply)
            if listed is None:
                break  # focus never answered: the checks say why
            app = next((a for a in listed.apps if a.app_scope == SCOPE), None)
            kind, version = self._draw(rng, app, n)
            operation_id = f"drill-{self.seed}-op{n}"
            n += 1
            self.kinds[operation_id] = (kind, version)
            self.sent[operation_id] = []
            body: Message
            if kind == "install":
                assert version is not None
                path = str(self.bundles[version])
                body = RegistryInstallRequest(operation_id=operation_id, path=path)
            else:
                body = RegistryOperateRequest(operation_id=operation_id, kind=kind, app_scope=SCOPE)
            answer = await self._ask(stage, body, AppOperationInfo)
            if answer is not None:
                self.sent[operation_id].append((answer.state, answer.code))
            if app is not None and app.enabled and rng.random() < 0.7:
                await self._call(stage, n)
            await trio.sleep(rng.uniform(*_GAP_S))

    def _draw(
        self, rng: random.Random, app: RegistryAppInfo | None, n: int
    ) -> tuple[Literal["install"] | OperateKind, str | None]:
        """The next operation: (kind, the version an install names). A run, however short,
        opens with one of each kind that moves the versions (`OPENING`)."""
        if n < len(OPENING):
            return OPENING[n]
        if app is None:
            if rng.random() < 0.15:
                return "install", TAMPERED
            return "install", VERSIONS[rng.randrange(len(VERSIONS))]
        later = [v for v in VERSIONS if _key(v) > _key(app.version)]
        draw = rng.random()
        if draw < 0.35 and later:
            return "install", later[rng.randrange(len(later))]
        if draw < 0.55:
            return "rollback", None
        if draw < 0.70:
            return ("disable" if app.enabled else "enable"), None
        if draw < 0.78:
            return "remove", None
        if draw < 0.85:
            return "install", TAMPERED
        if draw < 0.92:
            earlier = [v for v in VERSIONS if _key(v) < _key(app.version)]
            if earlier:
                return "install", earlier[rng.randrange(len(earlier))]  # a downgrade: refused
        return ("enable", None) if not app.enabled else ("install", app.version)

    async def _ask(self, stage: Stage, body: Message, expect: type[M]) -> M | None:
        """`body`'s answer from focus, sent again (the same body) until one comes; None if
        none came in `_GIVE_UP_S`."""
        self._asking += 1
        try:
            return await self._until_answered(stage, body, expect)
        finally:
            self._asking -= 1

    async def _until_answered(self, stage: Stage, body: Message, expect: type[M]) -> M | None:
        runtime_dir = stage.setup.runtime_dir
        give_up = trio.current_time() + _GIVE_UP_S
        while trio.current_time() < give_up:
            try:
                return await trio.to_thread.run_sync(
                    _focus_request, runtime_dir, body, expect, abandon_on_cancel=True
                )
            except (LineUpError, NotRunning, OSError, TimeoutError) as exc:
                log.info("drill.installs.retry kind=%s", type(exc).__name__)
                self.retries += 1
                await trio.sleep(_RETRY_S)
        return None

    async def _call(self, stage: Stage, n: int) -> None:
        """The Agent calls the app's tool (answered, or refused if the app is changing)."""
        call_id = f"call-drill-{self.seed}-pkg{n}"
        payload = wire.ToolCallPayload(
            call_id=call_id,
            tool=f"{SCOPE}.echo",
            inventory_revision=stage.agent.revision or "",
            input={"n": n},
        )
        self.calls += 1
        await stage.agent.post_call(stage.client, call_id, f"{SCOPE}.echo", payload)

    async def unsettled(self, stage: Stage) -> int:
        """Requests in flight, and operations the journal has not ended yet."""
        return self._asking + await trio.to_thread.run_sync(
            _open_operations, stage.setup.runtime_dir
        )

    # ------------------------------------------------------------------ afterwards

    def check(self, setup: Setup) -> list[Invariant]:
        return check_installs(self.sent_list(), Journal.read(setup.runtime_dir))

    def sent_list(self) -> list[Sent]:
        return [
            Sent(op_id, *self.kinds[op_id], tuple(answers)) for op_id, answers in self.sent.items()
        ]

    def report(self) -> dict[str, Any]:
        by_kind: dict[str, int] = {}
        endings: dict[str, int] = {}
        for op_id, answers in self.sent.items():
            kind = self.kinds[op_id][0]
            by_kind[kind] = by_kind.get(kind, 0) + 1
            for state, code in answers[-1:]:
                ending = state if code is None else f"{state}:{code}"
                endings[ending] = endings.get(ending, 0) + 1
        return {
            "operations": len(self.sent),
            "by_kind": dict(sorted(by_kind.items())),
            "endings": dict(sorted(endings.items())),
            "requests_sent_again": self.retries,
            "tool_calls": self.calls,
        }


def _focus_request(runtime_dir: Path, body: Message, expect: type[M]) -> M:
    return focus_request(runtime_dir, body, expect, timeout=_REQUEST_S)


def _open_operations(runtime_dir: Path) -> int:
    connection = apsw.Connection(str(runtime_dir / "lineup.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        ((count,),) = connection.execute(
            "SELECT count(*) FROM app_operations WHERE state IN ('requested', 'running')"
        ).fetchall()
    finally:
        connection.close()
    assert isinstance(count, int)  # a count
    return count


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))
