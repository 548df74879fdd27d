"""Instances and the focus stack, without I/O (DESIGN §5).

Theory of operation
-------------------
An instance moves through the fixed table of states the store checks too
(`facts/instances.py`):

    starting → foreground | background | suspended
    foreground ↔ background, either → suspended, suspended → foreground | background
    any live state → stopping → stopped | failed   (starting may also fail)

The focus stack is an ordered list of live instances; the topmost one that is up is in the
foreground and every other one that is up is in the background. Bringing an instance forward
moves it to the top; closing or failing the top restores the previous live instance; when
nothing else can take the foreground, the recovery app (`chat`, Interact) does. `FocusStack`
returns the state changes each operation implies, so the actor can persist them in one go and
tell the Shell.

An instance of an app with modes (Interact, `facts/modes.py`) has one, kept here beside its
state (`set_mode`, taken with `take_modes`): nothing but its own switch changes it, so when the
instances in front of it close, it comes back in the mode it was in.

Two kinds of live instance are not up. One `starting` keeps its place and takes the front when
it is ready. One `suspended` has no process (the runtime restarted): it keeps its place and its
session data, but never the front, until it is resumed (seed 004 §4.4: suspended → restoring →
active) once its process runs again; or it is closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, cast

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts import instances as machine
from lineup.facts.instances import LIVE, NOT_UP, TRANSITIONS, InstanceState
from lineup.facts.modes import DEFAULT_MODE, Mode
from lineup.facts.scopes import CHAT

__all__ = [
    "LIVE",
    "NOT_UP",
    "TRANSITIONS",
    "FocusStack",
    "InstanceState",
    "transition",
]


def transition(current: str, target: str) -> str:
    """The new state, or LineUpError(lifecycle_denied) for a move the table does not have."""
    return machine.step(cast(InstanceState, current), cast(InstanceState, target))[0]


@dataclass
class FocusStack:
    """Live instances, bottom first; the top is in the foreground."""

    states: dict[str, str] = field(default_factory=dict)  # instance_id -> state
    order: list[str] = field(default_factory=list)
    # The moves not yet taken (`take_moves`): instance_id -> its state before the first of them
    # (None: born since).
    _before: dict[str, str | None] = field(default_factory=dict)
    modes: dict[str, Mode] = field(default_factory=dict)  # instance_id -> mode (modal apps')
    _modes_set: dict[str, Mode] = field(default_factory=dict)  # not yet taken (`take_modes`)

    def _set(self, instance_id: str, state: str) -> None:
        self._before.setdefault(instance_id, self.states.get(instance_id))
        self.states[instance_id] = state

    def take_moves(self) -> dict[str, tuple[str | None, str]]:
        """The instances moved since the last call: `(state before, state now)` each, in the
        order they first moved, a move that came back where it started left out."""
        moves = {i: (before, self.states[i]) for i, before in self._before.items()}
        self._before = {}
        return {i: move for i, move in moves.items() if move[0] != move[1]}

    def restore_moves(self, moves: dict[str, tuple[str | None, str]]) -> None:
        """Put back moves taken but not written: they are still to be written."""
        self._before = {i: before for i, (before, _) in moves.items()} | {
            i: before for i, before in self._before.items() if i not in moves
        }

    def take_modes(self) -> dict[str, Mode]:
        """The modes set since the last call (a switch back to where it was left out: its
        record never moved)."""
        taken, self._modes_set = self._modes_set, {}
        return taken

    def restore_modes(self, modes: dict[str, Mode]) -> None:
        """Put back modes taken but not written (a later switch wins)."""
        self._modes_set = modes | self._modes_set

    def set_mode(self, instance_id: str, mode: Mode) -> bool:
        """Switch a live instance's mode; True if it changed. Raises `app_instance_not_found`
        for one not live, `invalid_arguments` for one without modes."""
        self._require_live(instance_id)
        if instance_id not in self.modes:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"{instance_id} has no mode")
        if self.modes[instance_id] == mode:
            return False
        self.modes[instance_id] = mode
        self._modes_set[instance_id] = mode
        return True

    def forget(self, instance_id: str) -> None:
        """Undo `add`: the instance was never written, so it exists nowhere."""
        self.order.remove(instance_id)
        self.states.pop(instance_id, None)
        self._before.pop(instance_id, None)
        self.modes.pop(instance_id, None)
        self._modes_set.pop(instance_id, None)

    def place_recovery(self) -> None:
        """The recovery app, (re)born `starting` at the bottom of the stack, in the default
        mode (the one it was in ended with it)."""
        self.states.pop(CHAT, None)
        self.order = [i for i in self.order if i != CHAT]
        self.order.insert(0, CHAT)
        self._before[CHAT] = None
        self.states[CHAT] = "starting"
        self.modes[CHAT] = DEFAULT_MODE

    @property
    def top(self) -> str | None:
        return self.order[-1] if self.order else None

    def add(
        self, instance_id: str, *, foreground: bool, mode: Mode | None = None
    ) -> dict[str, str]:
        """A new instance (state `starting`, in `mode` if its app has modes); on top if it
        takes the foreground."""
        if instance_id in self.states and self.states[instance_id] in LIVE:
            raise LineUpError(ErrorCode.LIFECYCLE_DENIED, f"{instance_id} exists")
        self._before[instance_id] = None
        self.states[instance_id] = "starting"
        if mode is not None:
            self.modes[instance_id] = mode
        if foreground:
            self.order.append(instance_id)
        else:
            self.order.insert(max(0, len(self.order) - 1), instance_id)
        return {instance_id: "starting"}

    def ready(self, instance_id: str) -> dict[str, str]:
        """A started instance is up: foreground if it is on top, else background."""
        return self._settle({instance_id})

    def bring_forward(self, instance_id: str) -> dict[str, str]:
        self._require_live(instance_id)
        self.order.remove(instance_id)
        self.order.append(instance_id)
        return self._settle()

    def send_back(self, instance_id: str) -> dict[str, str]:
        """Move an instance under the one below it (the previous live one takes the front)."""
        self._require_live(instance_id)
        if self.top == instance_id and len(self.order) > 1:
            self.order.remove(instance_id)
            self.order.insert(len(self.order) - 1, instance_id)
        return self._settle()

    def suspend(self, instance_id: str) -> dict[str, str]:
        """A live instance whose process is gone: suspended in its place; the front goes to the
        topmost instance that is up."""
        self._require_live(instance_id)
        changes: dict[str, str] = {}
        if self.states[instance_id] != "suspended":
            changes[instance_id] = transition(self.states[instance_id], "suspended")
            self._set(instance_id, changes[instance_id])
        return changes | self._settle()

    def resume(self, instance_id: str, *, foreground: bool) -> dict[str, str]:
        """An instance whose process runs (again) is up: with `foreground`, on top; without,
        just under the instance in front (it must not take the front by coming back). For one
        that is not suspended, with `foreground` this is `bring_forward`."""
        self._require_live(instance_id)
        if self.states[instance_id] != "suspended":
            return self.bring_forward(instance_id) if foreground else {}
        self.order.remove(instance_id)
        front = next((i for i in reversed(self.order) if self.states[i] not in NOT_UP), None)
        if foreground or front is None:
            self.order.append(instance_id)
        else:
            self.order.insert(self.order.index(front), instance_id)
        return self._settle({instance_id})

    def remove(
        self,
        instance_id: str,
        final: Literal["stopped", "failed"],
        *,
        restore_previous: bool = True,
    ) -> dict[str, str]:
        """Close (or fail) an instance; focus goes back to the previous live one, or, without
        `restore_previous` (its tool's `restore_previous_focus`), to the recovery app."""
        if instance_id == CHAT and final == "stopped":
            raise LineUpError(ErrorCode.LIFECYCLE_DENIED, "the recovery app stays")
        self._require_live(instance_id)
        was_top = self.top == instance_id
        self.order.remove(instance_id)
        if was_top and not restore_previous and CHAT in self.order:
            self.order.remove(CHAT)
            self.order.append(CHAT)
        self._set(instance_id, final)  # (the store has it `stopping` first: focus's `_close`)
        changes = {instance_id: final}
        if not self.order and CHAT in self.states:
            self.order.append(CHAT)
        return changes | self._settle()

    def recover(
        self, states: dict[str, str], order: list[str], modes: dict[str, Mode] | None = None
    ) -> dict[str, str]:
        """After a restart: instances caught starting or stopping come back suspended; each
        keeps the mode its record has."""
        self._before = {}
        self._modes_set = {}
        self.modes = dict(modes or {})
        self.states = dict(states)
        self.order = [i for i in order if self.states.get(i) in LIVE | {"stopping"}]
        changes: dict[str, str] = {}
        for instance_id, state in self.states.items():
            if state in ("starting", "stopping"):
                self._set(instance_id, "suspended")
                changes[instance_id] = "suspended"
                if instance_id not in self.order:
                    self.order.insert(0, instance_id)
        return changes

    def settle(self) -> dict[str, str]:
        """The changes that make the states agree with the order (after `recover`)."""
        return self._settle()

    def _require_live(self, instance_id: str) -> None:
        if self.states.get(instance_id) not in LIVE or instance_id not in self.order:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)

    def _settle(self, now_up: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
        """Make the states agree with the order: the topmost instance that is up is in the
        foreground, every other one that is up in the background. One still starting or
        suspended keeps its place and state; `now_up` names those that just came up."""
        changes: dict[str, str] = {}
        up = [i for i in self.order if self.states[i] not in NOT_UP or i in now_up]
        front = up[-1] if up else None
        for instance_id in up:
            state = self.states[instance_id]
            want = "foreground" if instance_id == front else "background"
            if state != want:
                self._set(instance_id, transition(state, want))
                changes[instance_id] = want
        return changes
