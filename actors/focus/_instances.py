"""The app instances focus keeps, without I/O: whose each one is, where it stands on the focus
stack, and what each committed change does.

Theory of operation
-------------------
`Instances` holds every instance's app (its owner) beside the focus stack (`_stack.py`, which
applies the instance machine of `facts/instances.py`). A change (launch, ready, resume, bring
forward, send back, remove, recover, a switch of mode) moves states in memory only. `commit()`
takes what moved since the last commit as one `Commit` — the instance born, if any, the moves,
the stack after them, the modes switched — which the actor writes as one store request. Once
it is written, `effects(commit)` says what those moves do, as values (`Announce`,
`RefreshView`, `TellMode`, `PushApps`), and the actor carries them out; a commit that was not
written is put back (`rewind`) and goes with the next one.
The decisions are here, testable without a process; the I/O is the actor's, as h11's
connection decides and its caller reads and writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, cast

from lineup.actors.router.messages import InstanceEventKind
from lineup.facts import instances as machine
from lineup.facts.instances import LIVE, InstanceEffect, InstanceState
from lineup.facts.modes import Mode, mode_at_birth
from lineup.facts.scopes import CHAT

from ._stack import FocusStack

__all__ = [
    "Announce",
    "Born",
    "Commit",
    "Effect",
    "Instances",
    "PushApps",
    "RefreshView",
    "TellMode",
]

# The machine's announcements, as the router hears them.
_ANNOUNCED: Final[Mapping[InstanceEffect, InstanceEventKind]] = {
    "announce_started": "started",
    "announce_ready": "ready",
    "announce_ended": "ended",
    "announce_failed": "failed",
}
_UP: Final = LIVE - {"suspended"}  # has (or is getting) a process


@dataclass(frozen=True, slots=True)
class Announce:
    """Tell the router an instance's event: it releases the calls held for it, or ends them."""

    instance_id: str
    app_scope: str
    event: InstanceEventKind


@dataclass(frozen=True, slots=True)
class RefreshView:
    """Ask the app for its view of a resumed instance: the Shell has none of an instance that
    was suspended, and its process (new after a restart of the runtime) may hold nothing of it
    until it is told which instance to restore from its session data."""

    app_scope: str
    instance_id: str


@dataclass(frozen=True, slots=True)
class TellMode:
    """Tell the app an instance's mode (seed 003 §5.1): it was switched, or (`restored`) the
    instance came back in front in the mode it was in, after the instances over it went."""

    app_scope: str
    instance_id: str
    mode: Mode
    restored: bool


@dataclass(frozen=True, slots=True)
class PushApps:
    """Show the Shell the list of instances again."""


Effect = Announce | RefreshView | TellMode | PushApps


@dataclass(frozen=True, slots=True)
class Born:
    """An instance created by a commit, `starting`; its sub-session is named after it."""

    instance_id: str
    app_scope: str
    call_id: str | None = None
    conversation_id: str | None = None
    parent_instance_id: str | None = None  # the instance whose app opened it (`apps.open`)
    mode: Mode | None = None


@dataclass(frozen=True, slots=True)
class Commit:
    """One change of focus to write in one transaction."""

    born: Born | None
    moves: Mapping[str, tuple[str | None, str]]  # instance_id -> (state before, state now)
    stack: tuple[str, ...]
    modes: Mapping[str, Mode] = field(default_factory=dict)  # instance_id -> mode switched to
    errors: Mapping[str, str] = field(default_factory=dict)  # failed instance_id -> its code


class Instances:
    """The live instances and the focus stack (the module's docstring)."""

    def __init__(self) -> None:
        self._stack = FocusStack()
        self._owners: dict[str, str] = {}  # instance_id -> app_scope
        self._born: Born | None = None
        self._errors: dict[str, str] = {}  # failed since the last commit -> its code
        self._parents: dict[str, str] = {}  # instance_id -> the instance whose app opened it

    # ------------------------------------------------------------------ reading

    def owners(self) -> Mapping[str, str]:
        """Each known instance's app (live ones, and those ended since focus started)."""
        return self._owners

    def scope_of(self, instance_id: str) -> str | None:
        return self._owners.get(instance_id)

    def state_of(self, instance_id: str) -> str | None:
        return self._stack.states.get(instance_id)

    def is_live(self, instance_id: str) -> bool:
        return self._stack.states.get(instance_id) in LIVE

    def live_scope(self, instance_id: str) -> str | None:
        """The app of a live instance; None if it is not live."""
        return self._owners.get(instance_id) if self.is_live(instance_id) else None

    def live_of(self, app_scope: str) -> list[str]:
        return [i for i, s in self._owners.items() if s == app_scope and self.is_live(i)]

    def running(self, app_scope: str) -> list[str]:
        """The app's instances that have (or are getting) a process, the topmost first."""
        return [
            i
            for i in reversed(self._stack.order)
            if self._owners.get(i) == app_scope and self._stack.states.get(i) in _UP
        ]

    def topmost(self, app_scope: str) -> str | None:
        """The app's live instance highest on the stack."""
        return next(
            (
                i
                for i in reversed(self._stack.order)
                if self._owners.get(i) == app_scope and self.is_live(i)
            ),
            None,
        )

    def newest(self, app_scope: str) -> str | None:
        """The app's instance highest on the stack, whatever its state."""
        owned = (i for i in reversed(self._stack.order) if self._owners.get(i) == app_scope)
        return next(owned, None)

    def parent_of(self, instance_id: str) -> str | None:
        """The instance whose app opened this one (`apps.open`), if one did."""
        return self._parents.get(instance_id)

    def mode_of(self, instance_id: str) -> Mode | None:
        """A live instance's mode; None for an app without modes (or an instance not live)."""
        return self._stack.modes.get(instance_id) if self.is_live(instance_id) else None

    def front(self) -> str | None:
        """The instance in the foreground, if one is."""
        return next((i for i in self._stack.order if self._stack.states[i] == "foreground"), None)

    def shown(self) -> set[str]:
        """The instances whose views the Shell shows: live, and not suspended."""
        return {i for i, s in self._stack.states.items() if s in _UP}

    def scopes_up(self) -> list[str]:
        """The apps with an instance that has (or is getting) a process, by scope."""
        return sorted({s for i, s in self._owners.items() if self._stack.states.get(i) in _UP})

    def listing(self) -> tuple[str, list[tuple[str, str, str]]]:
        """The instance in front (the chat when none is) and every live one, bottom first, as
        `(instance_id, app_scope, state)`: what the Shell's app list shows (with `mode_of`)."""
        live = [i for i in self._stack.order if self.is_live(i)]
        front = next((i for i in reversed(live) if self._stack.states[i] == "foreground"), CHAT)
        return front, [(i, self._owners[i], self._stack.states[i]) for i in live]

    def stack(self) -> list[tuple[str, str, str]]:
        """Every instance on the stack, bottom first, as `(instance_id, app_scope, state)`."""
        return [(i, self._owners[i], self._stack.states[i]) for i in self._stack.order]

    def count_live(self, *, marked: str | None = None) -> int:
        """Live instances on the stack; with `marked`, those whose id is `<scope>:<marked>…`."""
        if marked is None:
            return len(self._stack.order)
        return sum(
            1
            for i, s in self._owners.items()
            if self.is_live(i) and i.startswith(marked, len(s) + 1)
        )

    # ------------------------------------------------------------------ changes

    def recover(
        self,
        rows: Iterable[tuple[str, str, str]],
        order: Iterable[str],
        *,
        runtime_restarted: bool,
        modes: Mapping[str, Mode] | None = None,
        parents: Mapping[str, str] | None = None,
    ) -> None:
        """Rebuild from the store's `(instance_id, app_scope, state)` rows, their `modes`, their
        `parents` and the stack. Instances caught starting or stopping come back suspended;
        after a restart of the whole runtime (no MiniApp process runs) every app instance is
        suspended. The recovery app is live and up whatever the store said (born again if it
        had ended), in the mode it was in."""
        rows = list(rows)
        self._owners = {instance_id: scope for instance_id, scope, _ in rows}
        self._stack.recover({i: state for i, _, state in rows}, list(order), dict(modes or {}))
        self._born = None
        self._errors = {}
        self._parents = dict(parents or {})
        if runtime_restarted:
            for instance_id in [i for i in self._stack.order if i != CHAT]:
                self._stack.suspend(instance_id)
        if CHAT not in self._owners or not self.is_live(CHAT):
            self._owners[CHAT] = CHAT
            self._stack.place_recovery()
            self._born = Born(CHAT, CHAT, mode=mode_at_birth(CHAT))
        # The recovery app's process is part of the tree: it is always up.
        if self._stack.states[CHAT] == "starting":
            self._stack.ready(CHAT)
        else:
            self._stack.resume(CHAT, foreground=False)
        self._stack.settle()

    def launch(
        self,
        instance_id: str,
        app_scope: str,
        *,
        foreground: bool,
        call_id: str,
        conversation_id: str | None = None,
        parent_instance_id: str | None = None,
    ) -> None:
        """A new instance, `starting` (on top if it takes the foreground; in the default mode
        if its app has modes). Raises `lifecycle_denied` if it is live already."""
        mode = mode_at_birth(app_scope)
        self._stack.add(instance_id, foreground=foreground, mode=mode)
        self._owners[instance_id] = app_scope
        if parent_instance_id is not None:
            self._parents[instance_id] = parent_instance_id
        self._born = Born(
            instance_id, app_scope, call_id, conversation_id, parent_instance_id, mode
        )

    def forget(self, instance_id: str) -> None:
        """Undo `launch`: the instance was never written, so it exists nowhere."""
        self._stack.forget(instance_id)
        self._owners.pop(instance_id, None)
        self._parents.pop(instance_id, None)
        if self._born is not None and self._born.instance_id == instance_id:
            self._born = None

    def ready(self, instance_id: str) -> None:
        self._stack.ready(instance_id)

    def resume(self, instance_id: str, *, foreground: bool) -> None:
        self._stack.resume(instance_id, foreground=foreground)

    def bring_forward(self, instance_id: str) -> None:
        self._stack.bring_forward(instance_id)

    def send_back(self, instance_id: str) -> None:
        self._stack.send_back(instance_id)

    def remove(
        self,
        instance_id: str,
        final: Literal["stopped", "failed"],
        *,
        error: str | None = None,
        restore_previous: bool = True,
    ) -> None:
        """End an instance; a failed one records `error` (a stable code) with it."""
        self._stack.remove(instance_id, final, restore_previous=restore_previous)
        if final == "failed" and error is not None:
            self._errors[instance_id] = error

    def set_mode(self, instance_id: str, mode: Mode) -> bool:
        """Switch a live instance's mode (True if it changed): written with the next commit.
        Raises `app_instance_not_found` (not live) or `invalid_arguments` (no modes)."""
        return self._stack.set_mode(instance_id, mode)

    # ------------------------------------------------------------------ commits

    def commit(self) -> Commit:
        """What changed since the last commit, taken: write it, then carry out `effects`."""
        born, self._born = self._born, None
        errors, self._errors = self._errors, {}
        return Commit(
            born=born,
            moves=self._stack.take_moves(),
            stack=tuple(self._stack.order),
            modes=self._stack.take_modes(),
            errors=errors,
        )

    def rewind(self, commit: Commit) -> None:
        """`commit` was not written: it is still to be written, with the next one."""
        self._stack.restore_moves(dict(commit.moves))
        self._stack.restore_modes(dict(commit.modes))
        self._errors = dict(commit.errors) | self._errors
        if self._born is None:
            self._born = commit.born

    def effects(self, commit: Commit) -> list[Effect]:
        """What a written `commit` does: each move's effects in the machine's table, in the
        order the instances first moved; the modes switched, and the mode of an instance with
        one that came back to the front (restored: the app resumes it); then the Shell's app
        list if anything changed."""
        effects: list[Effect] = []
        for instance_id, (before, after) in commit.moves.items():
            scope = self._owners.get(instance_id)
            if scope is None:
                continue
            for effect in machine.effects_of(
                cast(InstanceState | None, before), cast(InstanceState, after)
            ):
                if effect == "refresh_view":
                    effects.append(RefreshView(scope, instance_id))
                else:
                    effects.append(Announce(instance_id, scope, _ANNOUNCED[effect]))
        for instance_id, switched in commit.modes.items():
            scope = self._owners.get(instance_id)
            if scope is not None:
                effects.append(TellMode(scope, instance_id, switched, restored=False))
        for instance_id, (before, after) in commit.moves.items():
            mode = self.mode_of(instance_id)
            scope = self._owners.get(instance_id)
            back = before in ("background", "suspended") and after == "foreground"
            restored = back and instance_id not in commit.modes
            if restored and mode is not None and scope is not None:
                effects.append(TellMode(scope, instance_id, mode, restored=True))
        if commit.moves or commit.born is not None or commit.modes:
            effects.append(PushApps())
        return effects
