"""Instances and the focus stack, app session data, the app registry and the inventory revision.
Re-exported by `messages`.

Instances move by the table in `instances.machine` (DESIGN §5); an illegal move is refused with
`lifecycle_denied`, an unknown instance with `app_instance_not_found`. The focus stack is stored
whole, with a revision that grows on every change. Session data is one JSON object per
`(app_scope, app_session_id)` with a revision (seed 004 §6.3): a write names the revision it
read, and a stale one is refused with `stale_revision`, never merged.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message

from ._fields import Id, Limit, Name, Revision
from .instances.machine import InstanceState

__all__ = [
    "AppEnabledSetReply",
    "AppEnabledSetRequest",
    "AppRegistryListReply",
    "AppRegistryListRequest",
    "AppRegistryPutReply",
    "AppRegistryPutRequest",
    "AppRow",
    "FocusStackGetReply",
    "FocusStackGetRequest",
    "FocusStackSetReply",
    "FocusStackSetRequest",
    "InstanceCommitReply",
    "InstanceCommitRequest",
    "InstanceListReply",
    "InstanceListRequest",
    "InstanceMove",
    "InstanceRecoverReply",
    "InstanceRecoverRequest",
    "InstanceRow",
    "InstanceState",
    "InstanceTransitionReply",
    "InstanceTransitionRequest",
    "InstanceUpsertReply",
    "InstanceUpsertRequest",
    "InventoryRevisionBumpReply",
    "InventoryRevisionBumpRequest",
    "InventoryRevisionGetReply",
    "InventoryRevisionGetRequest",
    "SessionDataGetReply",
    "SessionDataGetRequest",
    "SessionDataReplaceReply",
    "SessionDataReplaceRequest",
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


class InstanceTransitionReply(Message):
    type: Literal["store.instance.transition.reply"] = "store.instance.transition.reply"
    instance: InstanceRow
    changed: bool


class InstanceMove(Message):
    type: Literal["store.instance.move"] = "store.instance.move"
    instance_id: Id
    to_state: InstanceState


class InstanceCommitRequest(Message):
    """One change of focus, in ONE transaction: the instance it creates (`born`, as a put),
    the moves it makes (each as a transition, in order), and the whole focus stack after it (as a
    stack set). Each part is checked as its own request would be, and any refusal writes
    nothing of the whole. A retry of a commit that was applied writes nothing (`changed`
    False)."""

    type: Literal["store.instance.commit"] = "store.instance.commit"
    born: InstanceUpsertRequest | None = None
    moves: tuple[InstanceMove, ...] = Field(default=(), max_length=MAX_FOCUS_STACK + 1)
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


# ---------------------------------------------------------------------------------- session data


class SessionDataGetRequest(Message):
    type: Literal["store.session_data.get"] = "store.session_data.get"
    app_scope: Name
    app_session_id: Id


class SessionDataGetReply(Message):
    """Never written: `data` None, `revision` 0."""

    type: Literal["store.session_data.get.reply"] = "store.session_data.get.reply"
    data: dict[str, Any] | None
    revision: int


class SessionDataReplaceRequest(Message):
    """Replace the document written at `expected_revision`; it becomes `expected_revision + 1`.
    The first write names revision 0. Refused with `stale_revision` when the document is at
    another revision (unless this very write made it so: a repeat answers `changed` False), and
    with `invalid_arguments` for data that is not strict JSON, over 256 KiB or nested deeper
    than 32."""

    type: Literal["store.session_data.replace"] = "store.session_data.replace"
    app_scope: Name
    app_session_id: Id
    data: dict[str, Any]
    expected_revision: Revision


class SessionDataReplaceReply(Message):
    type: Literal["store.session_data.replace.reply"] = "store.session_data.replace.reply"
    revision: int
    changed: bool


# ---------------------------------------------------------------------------------- registry


class AppRow(Message):
    type: Literal["store.registry.row"] = "store.registry.row"
    app_scope: Name
    enabled: bool
    version: Name
    kind: Name
    updated_at: float


class AppRegistryPutRequest(Message):
    """Install an app or record its new version (the old one becomes the rollback target).
    A new app is enabled; an existing one keeps its flag. Idempotent: the same version and
    manifest again change nothing. Refused with `invalid_arguments` for a manifest over
    256 KiB."""

    type: Literal["store.registry.put"] = "store.registry.put"
    app_scope: Name
    version: Name
    kind: Name  # the manifest's kind, e.g. "system", "bundled-reference"
    manifest: dict[str, Any]


class AppRegistryPutReply(Message):
    type: Literal["store.registry.put.reply"] = "store.registry.put.reply"
    app: AppRow
    created: bool
    changed: bool


class AppEnabledSetRequest(Message):
    """Enable or disable an installed app (`app_not_installed` otherwise). Idempotent. Does not
    bump the inventory revision: the router does, after."""

    type: Literal["store.registry.enabled.set"] = "store.registry.enabled.set"
    app_scope: Name
    enabled: bool


class AppEnabledSetReply(Message):
    type: Literal["store.registry.enabled.set.reply"] = "store.registry.enabled.set.reply"
    app: AppRow
    changed: bool


class AppRegistryListRequest(Message):
    """Installed apps by `app_scope`."""

    type: Literal["store.registry.list"] = "store.registry.list"
    limit: Limit = 1000


class AppRegistryListReply(Message):
    type: Literal["store.registry.list.reply"] = "store.registry.list.reply"
    apps: tuple[AppRow, ...]


# ---------------------------------------------------------------------------------- inventory


class InventoryRevisionBumpRequest(Message):
    """A new inventory revision, greater than every one before (never reused), in a transaction
    of its own. `reason` is a short code kept with it (e.g. "app_enabled"). With `bump_id` (e.g.
    a digest of the inventory's content), the current revision is returned when it was made
    with that id (`created` False): a retry, or a restart with nothing changed. An id whose
    revision is no longer the current one gets a new revision: content that comes back (an app
    disabled, then enabled again) is a change like any other."""

    type: Literal["store.inventory.revision.bump"] = "store.inventory.revision.bump"
    reason: Name
    bump_id: Id | None = None


class InventoryRevisionBumpReply(Message):
    type: Literal["store.inventory.revision.bump.reply"] = "store.inventory.revision.bump.reply"
    revision: int
    created: bool


class InventoryRevisionGetRequest(Message):
    type: Literal["store.inventory.revision.get"] = "store.inventory.revision.get"


class InventoryRevisionGetReply(Message):
    """0 before the first bump."""

    type: Literal["store.inventory.revision.get.reply"] = "store.inventory.revision.get.reply"
    revision: int
