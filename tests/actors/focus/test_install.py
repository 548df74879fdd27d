"""Focus's installer when the store's answer to the row is lost: the real installer, a real store
over real socket pairs and real SQLite, a real cache; only the focus `Port` loses the answer
(or holds the request back until after the installer gave up), as a store stalled past focus's
deadline would."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TypeVar, cast

import pytest
import trio

from lineup.actors.focus._actor import FocusActor
from lineup.actors.focus._app_book import AppBook
from lineup.actors.focus._install import Installer
from lineup.actors.focus._installed import CRASH_POINTS, InstalledApps
from lineup.actors.focus._lifecycle import Lifecycle
from lineup.actors.focus._operation_log import OperationLog
from lineup.actors.focus._port import Port
from lineup.actors.focus._publisher import Publisher
from lineup.actors.focus.messages import RegistryInstallRequest
from lineup.actors.kernel import (
    ActorContext,
    ActorKind,
    Bus,
    DeadlineExceeded,
    ErrorCode,
    Identity,
    Message,
)
from lineup.actors.store.messages import (
    AppInstallRecordRequest,
    AppOperationListReply,
    AppOperationListRequest,
    AppRegistryGetReply,
    AppRegistryGetRequest,
)
from lineup.sdk.bundle import SigningKey, read_header
from lineup.tests.actors.store._harness import StoreHarness, refusal, start_store
from lineup.tests.support.bundles import build_bundle, trust

KEY = SigningKey(b"\x07" * 32)
SCOPE = "deliver"
M = TypeVar("M", bound=Message)


class LosingPort(Port):
    """The store as focus reaches it, but the row's request gets no answer: it is carried out
    and its answer lost (`late=False`), or held back until the test sends it (`late=True`)."""

    def __init__(self, bus: Bus, *, late: bool) -> None:
        super().__init__(bus, bus.me)
        self.late = late
        self.held: list[Message] = []

    async def store(self, request: Message, expect: type[M]) -> M:
        if isinstance(request, AppInstallRecordRequest):
            if self.late:
                self.held.append(request)
            else:
                await super().store(request, expect)
            raise DeadlineExceeded(ErrorCode.DEADLINE_EXCEEDED, "no reply")
        return await super().store(request, expect)


class Quiet:
    """What the installer tells beyond the store (the inventory, the live instances): noted."""

    def __init__(self) -> None:
        self.published = 0

    async def publish(self) -> None:
        self.published += 1

    async def close_all(self, scope: str) -> None:
        pass


async def an_installer(
    nursery: trio.Nursery, data_dir: Path, *, late: bool
) -> tuple[Installer, InstalledApps, LosingPort, StoreHarness, Quiet]:
    store = await start_store(nursery, data_dir)
    port = LosingPort(store.peers[ActorKind.FOCUS], late=late)
    quiet = Quiet()
    installed = InstalledApps(port, AppBook(), cast(Publisher, quiet), data_dir, {})
    installer = Installer(
        port, installed, OperationLog(port), cast(Lifecycle, quiet), cast(Publisher, quiet)
    )
    trust(data_dir, KEY.public)
    return installer, installed, port, store, quiet


async def test_an_install_whose_row_was_written_but_unheard_completes_with_its_cache(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    installer, installed, _, store, quiet = await an_installer(nursery, tmp_path, late=False)
    data = build_bundle(tmp_path / "src", KEY)
    done = await installer.install(
        RegistryInstallRequest(operation_id="op-1", bundle_b64=base64.b64encode(data).decode())
    )
    assert (done.state, done.code) == ("completed", None)
    # The app is taken as its row says, from a cache that is still whole.
    app = installed.book.installed(SCOPE)
    assert app is not None and app.row.version == "1.0"
    entry = installed.book.get(SCOPE)
    assert entry is not None and entry.refusal is None
    assert await installed.cache.verify(SCOPE, "1.0", read_header(data)[0].sha256)
    assert quiet.published == 1
    record = await store.ask(AppRegistryGetRequest(app_scope=SCOPE), AppRegistryGetReply)
    assert record.record is not None and record.record.app.version == "1.0"


async def test_an_install_whose_row_request_comes_late_fails_and_writes_nothing(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    installer, installed, port, store, quiet = await an_installer(nursery, tmp_path, late=True)
    data = build_bundle(tmp_path / "src", KEY)
    done = await installer.install(
        RegistryInstallRequest(operation_id="op-1", bundle_b64=base64.b64encode(data).decode())
    )
    assert (done.state, done.code) == ("failed", ErrorCode.DEADLINE_EXCEEDED.value)
    assert not (installed.cache.root / SCOPE).exists()  # no row will ever name it
    # The request reaches the store after all: refused, so the journal stays true.
    [late] = port.held
    assert await refusal(store, late) == ErrorCode.DEADLINE_EXCEEDED
    record = await store.ask(AppRegistryGetRequest(app_scope=SCOPE), AppRegistryGetReply)
    assert record.record is None
    ops = await store.ask(AppOperationListRequest(operation_id="op-1"), AppOperationListReply)
    assert [(op.state, op.code) for op in ops.operations] == [("failed", "deadline_exceeded")]
    assert installed.book.installed(SCOPE) is None and quiet.published == 0


def test_focus_refuses_an_install_point_it_does_not_have() -> None:
    def focus(config: dict[str, str]) -> FocusActor:
        identity = Identity(ActorKind.FOCUS, "focus")
        return FocusActor(ActorContext(identity, 1, Path("/nonexistent"), config, cast(Bus, None)))

    assert "row_written" in CRASH_POINTS
    focus({"registry_pause_at": "row_written"})
    with pytest.raises(ValueError, match="no such install point"):
        focus({"registry_crash_at": "row_writen"})
