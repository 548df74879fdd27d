"""Who may do what with focus's apps and instances: the checks every service of focus makes
before it acts, on the two books it reads (`AppBook`, `Instances`).

An app acts only on its own instances (`owned`; another app's is audited, as untrusted code
asked), most requests only on a live one (`live_owned`), and its session is named after the
instance (`session_of`). An app is launched only when it is usable, installed and enabled
(`require_enabled`). The books are the actor's; the services read them here and through
`book` and `instances`, and only the actor's lifecycle writes them.
"""

from __future__ import annotations

from collections.abc import Callable

from lineup.actors.kernel import AuditRecord, Envelope, ErrorCode, LineUpError, app_scope_of
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
        )

    async def push_apps(self) -> None:
        """Tell the Shells the app list again (best effort: a Shell asks when it connects)."""
        for watcher in self.watchers:
            watcher()
        await self._port.tell_hostbridge(self.app_list())
