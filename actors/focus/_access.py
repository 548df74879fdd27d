"""Who may do what with focus's apps and instances: the checks every service of focus makes
before it acts, on the two books it reads (`AppBook`, `Instances`).

An app acts only on its own instances (`owned`; another app's is audited, as untrusted code
asked), most requests only on a live one (`live_owned`), and its session is named after the
instance (`session_of`). An app is launched only when it is usable, installed and enabled
(`require_enabled`). The books are the actor's; the services read them here and through
`book` and `instances`, and only the actor's lifecycle writes them.

The router looks a call's instance up in an index focus keeps it told of (`index`, after every
change focus persists and whenever the app list changes): what focus's own lookup would find
without acting on it, the instances of apps `require_enabled` refuses left out, so that the
router asks focus for those and gets the refusal (`actors/router/_instance_index`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import cast

from lineup.actors.kernel import AuditRecord, Envelope, ErrorCode, LineUpError, app_scope_of
from lineup.actors.router.messages import MAX_INDEXED, IndexedInstance, InstanceIndexEvent
from lineup.facts.instances import InstanceState
from lineup.facts.scopes import CHAT
from lineup.hostbridge.messages import AppsUpdatedEvent, LaunchableApp, LiveInstance

from ._app_book import AppBook
from ._instances import Instances
from ._port import Port

__all__ = ["Access", "SessionKey"]

SessionKey = tuple[str, str]  # (app_scope, instance_id): a session is named after its instance


class Access:
    """The checks of focus (see the module's docstring) on `book` and `instances`."""

    def __init__(self, port: Port, book: AppBook, instances: Instances) -> None:
        self._port = port
        self.book = book
        self.instances = instances
        # Told whenever the app list is pushed (the apps' state views, `_app_state`).
        self.watchers: list[Callable[[], None]] = []

    def owned(self, env: Envelope, instance_id: str) -> str:
        """The sending MiniApp's scope, if `instance_id` is one of its instances."""
        scope = app_scope_of(env.sender)
        owner = self.instances.scope_of(instance_id)
        if owner is None:
            # Ended before this focus started (it keeps only live ones), or never existed.
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        if owner != scope:
            # Another app's instance: untrusted code asked, so it is audited.
            self._port.bus.audit(
                AuditRecord.scope_denied(
                    self._port.me.name, env.sender.name, env.body.TYPE, instance_id
                )
            )
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, instance_id)
        return scope

    def live_owned(self, env: Envelope, instance_id: str) -> str:
        """The sender's scope, if `instance_id` is its live instance."""
        scope = self.owned(env, instance_id)
        if not self.instances.is_live(instance_id):
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        return scope

    def session_of(self, env: Envelope, instance_id: str) -> SessionKey:
        """The session of one of the sender's live instances (a session is named after it).
        An instance that has ended has none: its data stays for the record, but nobody reads
        or writes it any more (`app_instance_not_found`)."""
        return self.live_owned(env, instance_id), instance_id

    def require_enabled(self, app_scope: str) -> None:
        """Raise why `app_scope` may not be launched now, if it may not."""
        refused = self.book.refusal(app_scope)  # incompatible, unavailable
        if refused is not None:
            raise LineUpError(refused, app_scope)
        if self.book.manifest(app_scope) is None:
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, app_scope)
        if not self.book.enabled(app_scope):
            raise LineUpError(ErrorCode.APP_DISABLED, app_scope)

    def app_list(self) -> AppsUpdatedEvent:
        """The Shell's list: the live instances in stack order and the one in front, and the
        apps its launcher offers: each that an open would start now (usable, enabled; not the
        chat, which is always there), by title, then scope."""
        foreground, live = self.instances.listing()
        titled = [
            (self.book.title(scope), scope)
            for scope in self.book.manifests()  # the usable ones
            if scope != CHAT and self.book.enabled(scope)
        ]
        return AppsUpdatedEvent(
            foreground=foreground,
            instances=tuple(
                LiveInstance(
                    instance_id=instance_id,
                    app_scope=scope,
                    state=state,
                    title=self.book.title(scope),
                    mode=self.instances.mode_of(instance_id),
                )
                for instance_id, scope, state in live
            ),
            launchable=tuple(
                LaunchableApp(app_scope=scope, title=title)
                for title, scope in sorted(titled, key=lambda t: (t[0].casefold(), t[1]))
            ),
            version=time.monotonic_ns(),
        )

    async def push_apps(self) -> None:
        """Tell the Shells the app list again (best effort: a Shell asks when it connects),
        and the router its index (an app enabled or disabled changes it)."""
        for watcher in self.watchers:
            watcher()
        await self.tell_index()
        await self._port.tell_hostbridge(self.app_list())

    def index(self) -> InstanceIndexEvent:
        """The router's index of the instances now (the module's docstring), stamped with a
        monotonic clock so that the router keeps the newest of those told out of order."""
        entries = [
            IndexedInstance(
                instance_id=instance_id, app_scope=scope, state=cast(InstanceState, state)
            )
            for instance_id, scope, state in self.instances.stack()
            if scope == CHAT or self._findable(scope)
        ]
        if len(entries) > MAX_INDEXED:
            entries = []  # the router then asks focus for every call
        return InstanceIndexEvent(version=time.monotonic_ns(), instances=tuple(entries))

    async def tell_index(self) -> None:
        """Tell the router the index, if it has a channel to focus (else it asks focus until
        it is told: focus tells it again after answering it, `on_find`)."""
        if self._port.bus.connection("router") is not None:
            await self._port.tell_router(self.index())

    def _findable(self, app_scope: str) -> bool:
        try:
            self.require_enabled(app_scope)
        except LineUpError:
            return False
        return True
