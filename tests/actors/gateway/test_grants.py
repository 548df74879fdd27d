"""The user's grants (`actors/gateway/_grants.py`) and the permissions page's list
(`gateway.ui.grants.list`): the grants merged with every installed app's declared capabilities
(from focus's registry) and the host's policy, and what the gateway lists while focus cannot
answer."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from lineup.actors.focus.messages import RegistryListRequest
from lineup.actors.gateway._capability_state import CapabilityConfig
from lineup.actors.gateway._grants import Grants, grant_views
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store import messages as store
from lineup.sdk.capabilities import CATALOG
from lineup.sdk.protocol import RegistryAppInfo, RegistryListReply


def _grant(scope: str, capability: str, policy: str, at: float = 100.0) -> store.CapabilityGrantRow:
    return store.CapabilityGrantRow.model_validate(
        {"app_scope": scope, "capability": capability, "policy": policy, "granted_at": at}
    )


def test_every_declared_capability_is_listed_beside_the_grants_and_the_host_policy() -> None:
    config = CapabilityConfig.from_config(
        {"unsupported": ["artifact.save"], "policy": {"hosted": {"notification.show": "deny"}}}
    )
    apps = {
        "board": ("Whiteboard", ("artifact.save", "notification.show")),
        "registry": ("App Registry", ("file.open", "app.install", "app.manage")),
        "quiet": ("Quiet", ()),  # declares nothing: no row
        "odd": ("Odd", ("not.in-catalog",)),  # not the catalog's: no row
    }
    grants = [
        _grant("board", "notification.show", "allow"),
        _grant("gone", "file.open", "deny"),  # an app since removed: still revocable
    ]
    views = grant_views(grants, apps, config)
    rows = {(v.app_scope, v.capability): v for v in views}
    assert list(rows) == sorted(rows)  # by app, then capability: a stable page
    assert set(rows) == {
        ("board", "artifact.save"),
        ("board", "notification.show"),
        ("registry", "app.install"),
        ("registry", "app.manage"),
        ("registry", "file.open"),
        ("gone", "file.open"),
        ("hosted", "notification.show"),
    }
    granted = rows["board", "notification.show"]
    assert (granted.policy, granted.granted, granted.granted_at) == ("allow", True, 100.0)
    assert granted.app_title == "Whiteboard"
    unsupported = rows["board", "artifact.save"]
    assert (unsupported.supported, unsupported.granted) == (False, False)
    assert unsupported.policy == CATALOG["artifact.save"].default_policy
    declared = rows["registry", "app.install"]
    assert (declared.policy, declared.granted, declared.app_title) == ("ask", False, "App Registry")
    assert (rows["gone", "file.open"].policy, rows["gone", "file.open"].app_title) == (
        "deny",
        "gone",
    )
    assert (
        rows["hosted", "notification.show"].policy,
        rows["hosted", "notification.show"].granted,
    ) == (
        "deny",
        False,
    )


def _app(
    scope: str, title: str, capabilities: tuple[str, ...], *, enabled: bool = True
) -> RegistryAppInfo:
    return RegistryAppInfo(
        app_scope=scope,
        title=title,
        version="1.0.0",
        kind="bundled-reference",
        source="bundled",
        enabled=enabled,
        state="active",
        removable=False,
        capabilities=capabilities,
    )


class FakeBus:
    """The store answers with `grants`; focus with `registry`, or raises `focus_error`."""

    def __init__(self) -> None:
        self.grants: list[store.CapabilityGrantRow] = []
        self.registry: tuple[RegistryAppInfo, ...] = ()
        self.focus_error: ErrorCode | None = None
        self.asked: list[str] = []

    async def request(self, peer: str, msg: Any, **_: Any) -> Any:
        self.asked.append(peer)
        if peer == "store":
            assert isinstance(msg, store.CapabilityGrantListRequest)
            return store.CapabilityGrantListReply(grants=tuple(self.grants))
        assert peer == "focus" and isinstance(msg, RegistryListRequest)
        if self.focus_error is not None:
            raise LineUpError(self.focus_error, "focus")
        return RegistryListReply(apps=self.registry, default_app="chat")


def _grants(bus: FakeBus) -> Grants:
    return Grants(
        bus,  # type: ignore[arg-type]
        CapabilityConfig.from_config(None),
        tell=lambda peer, event: None,
    )


async def test_the_list_asks_focus_and_falls_back_on_what_it_knows_while_focus_restarts() -> None:
    bus = FakeBus()
    bus.registry = (
        _app("chat", "Chat", ()),
        _app("board", "Whiteboard", ("artifact.save",)),
        _app("off", "Disabled one", ("notification.show",), enabled=False),
    )
    grants = _grants(bus)
    listed = {(g.app_scope, g.capability, g.app_title) for g in (await grants.page()).grants}
    assert listed == {
        ("board", "artifact.save", "Whiteboard"),
        ("off", "notification.show", "Disabled one"),  # disabled apps are listed too
    }
    assert bus.asked == ["store", "focus"]

    bus.focus_error = ErrorCode.ACTOR_RESTARTED  # transient: what focus said last time
    again = {(g.app_scope, g.capability, g.app_title) for g in (await grants.page()).grants}
    assert again == listed

    bus.focus_error = None
    bus.registry = (_app("board", "Whiteboard", ("artifact.save",)),)  # "off" was removed
    after = {(g.app_scope, g.capability) for g in (await grants.page()).grants}
    assert after == {("board", "artifact.save")}

    bus.focus_error = ErrorCode.INTERNAL_ERROR  # not transient: not hidden
    with pytest.raises(LineUpError) as raised:
        await grants.page()
    assert raised.value.code is ErrorCode.INTERNAL_ERROR


async def test_a_fresh_gateway_with_focus_down_lists_the_grants_alone() -> None:
    bus = FakeBus()
    bus.focus_error = ErrorCode.ACTOR_UNAVAILABLE
    bus.grants = [_grant("board", "artifact.save", "allow")]
    with trio.fail_after(5):
        views = (await _grants(bus).page()).grants
    assert [(v.app_scope, v.capability, v.granted) for v in views] == [
        ("board", "artifact.save", True)
    ]
