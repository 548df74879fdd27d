"""Instances and the focus stack (`store.instance.*`, `store.focus_stack.*`). Re-exported by
`lineup.actors.store.messages`.

Instances move by the table in `machine` (DESIGN §5); an illegal move is refused with
`lifecycle_denied`, an unknown instance with `app_instance_not_found`. The focus stack is stored
whole, with a revision that grows on every change.
"""

from typing import Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message
from lineup.facts.instances import InstanceState
from lineup.facts.modes import Mode

from .._fields import Id, Limit, Name, Revision

__all__ = [
    "MAX_FOCUS_STACK",
    "FocusStackGetReply",
    "FocusStackGetRequest",
    "FocusStackSetReply",
    "FocusStackSetRequest",
    "InstanceCommitReply",
    "InstanceCommitRequest",
    "InstanceListReply",
    "InstanceListRequest",
    "InstanceModeSet",
    "InstanceMove",
    "InstanceRecoverReply",
    "InstanceRecoverRequest",
    "InstanceRow",
    "InstanceState",
    "InstanceTransitionReply",
    "InstanceTransitionRequest",
    "InstanceUpsertReply",
    "InstanceUpsertRequest",
]

MAX_FOCUS_STACK = 256  # instances on the stack; far more than a device shows

# ---------------------------------------------------------------------------------- instances


class InstanceRow(Message):
    type: Literal["store.instance.row"] = "store.instance.row"
    instance_id: Id
    app_scope: Name
    state: InstanceState
    app_session_id: Id | None  # None only for an instance recorded before schema 3
    created_by_call_id: Id | None
    created_at: float
    updated_at: float
    # Seed 000 §6's record: the conversation it serves, the instance that opened it, when it
    # ended and the code it failed with (never a message); and its interaction mode (seed 003
    # §5.1: Interact's; None for an app without modes).
    conversation_id: Id | None = None
    parent_instance_id: Id | None = None
    stopped_at: float | None = None
    error: Name | None = None
    mode: Mode | None = None
    # The launching tool's `restore_previous_focus` (seed 003's descriptor): when it closes,
    # the app in front before it comes back (True) or the recovery app does (False).
    restore_previous: bool = True


class InstanceUpsertRequest(Message):
    """Create an instance, or bring an existing one to `state`.

    A new instance is born `starting`, or directly in a state `starting` may move to except
    `stopping` and the final ones. For an existing one, `app_scope` must match
    (`app_scope_mismatch`), `app_session_id` must match (`invalid_arguments`: a new instance
    gets a new sub-session), and `state` must be its state (a repeat: nothing written) or a
    legal move (`lifecycle_denied` otherwise). `created_by_call_id` is kept from the first put.
    Reaching `stopped` or `failed` also takes the instance off the focus stack."""

    type: Literal["store.instance.put"] = "store.instance.put"
    instance_id: Id
    app_scope: Name
    state: InstanceState
    app_session_id: Id
    created_by_call_id: Id | None = None
    # Kept from the first put, like `created_by_call_id`.
    conversation_id: Id | None = None
    parent_instance_id: Id | None = None
    mode: Mode | None = None
    restore_previous: bool = True


class InstanceUpsertReply(Message):
    type: Literal["store.instance.put.reply"] = "store.instance.put.reply"
    instance: InstanceRow
    created: bool
    changed: bool


class InstanceTransitionRequest(Message):
    """Move an instance by the legal table; moving it to its own state changes nothing.
    Reaching `stopped` or `failed` also takes it off the focus stack (a new stack revision)."""

    type: Literal["store.instance.transition"] = "store.instance.transition"
    instance_id: Id
    to_state: InstanceState
    expected_app_scope: Name | None = None
    error: Name | None = None  # the code a move to `failed` records (seed 000 §6 `error`)


class InstanceTransitionReply(Message):
    type: Literal["store.instance.transition.reply"] = "store.instance.transition.reply"
    instance: InstanceRow
    changed: bool


class InstanceMove(Message):
    type: Literal["store.instance.move"] = "store.instance.move"
    instance_id: Id
    to_state: InstanceState
    error: Name | None = None  # the code a move to `failed` records


class InstanceModeSet(Message):
    """A live instance's interaction mode (seed 003 §5.1); only an instance born with a mode
    has one to change (`invalid_arguments` otherwise)."""

    type: Literal["store.instance.mode"] = "store.instance.mode"
    instance_id: Id
    mode: Mode


class InstanceCommitRequest(Message):
    """One change of focus, in ONE transaction: the instance it creates (`born`, as a put),
    the moves it makes (each as a transition, in order), the modes it sets, and the whole focus
    stack after it (as a stack set). Each part is checked as its own request would be, and any
    refusal writes nothing of the whole. A retry of a commit that was applied writes nothing
    (`changed` False)."""

    type: Literal["store.instance.commit"] = "store.instance.commit"
    born: InstanceUpsertRequest | None = None
    moves: tuple[InstanceMove, ...] = Field(default=(), max_length=MAX_FOCUS_STACK + 1)
    modes: tuple[InstanceModeSet, ...] = Field(default=(), max_length=MAX_FOCUS_STACK + 1)
    stack: tuple[Id, ...] = Field(max_length=MAX_FOCUS_STACK)


class InstanceCommitReply(Message):
    """The instances the commit created or moved, as they are now, and the stack's revision."""

    type: Literal["store.instance.commit.reply"] = "store.instance.commit.reply"
    instances: tuple[InstanceRow, ...]
    revision: int
    changed: bool


class InstanceListRequest(Message):
    """Instances not yet ended (neither stopped nor failed), oldest first."""

    type: Literal["store.instance.list"] = "store.instance.list"
    app_scope: Name | None = None
    limit: Limit = 1000


class InstanceListReply(Message):
    type: Literal["store.instance.list.reply"] = "store.instance.list.reply"
    instances: tuple[InstanceRow, ...]


class InstanceRecoverRequest(Message):
    """After a runtime restart: every instance caught `starting` or `stopping` becomes
    `suspended`, in one transaction (DESIGN §5: never done). Idempotent: a second request finds
    none."""

    type: Literal["store.instance.recover"] = "store.instance.recover"


class InstanceRecoverReply(Message):
    """The instances this request moved, as they are now."""

    type: Literal["store.instance.recover.reply"] = "store.instance.recover.reply"
    instances: tuple[InstanceRow, ...]


# ---------------------------------------------------------------------------------- focus stack


class FocusStackSetRequest(Message):
    """Replace the whole stack (bottom first, the foreground instance last). Every id must be a
    distinct instance not yet ended (`invalid_arguments` for a repeat, `app_instance_not_found`
    otherwise). Setting the stack it already is changes nothing (idempotent); with
    `expected_revision`, a stack that changed since is refused with `stale_revision`."""

    type: Literal["store.focus_stack.set"] = "store.focus_stack.set"
    instance_ids: tuple[Id, ...] = Field(max_length=MAX_FOCUS_STACK)
    expected_revision: Revision | None = None


class FocusStackSetReply(Message):
    type: Literal["store.focus_stack.set.reply"] = "store.focus_stack.set.reply"
    instance_ids: tuple[Id, ...]
    revision: int
    changed: bool


class FocusStackGetRequest(Message):
    type: Literal["store.focus_stack.get"] = "store.focus_stack.get"


class FocusStackGetReply(Message):
    """An empty stack never set has revision 0."""

    type: Literal["store.focus_stack.get.reply"] = "store.focus_stack.get.reply"
    instance_ids: tuple[Id, ...]
    revision: int
