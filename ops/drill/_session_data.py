"""What the drill saw of its Surfaces' session data, and the invariant it must keep: a revision
the runtime acknowledged is never lost, nor read back older.

Theory of operation: the `surfaces` exercise writes each pad instance's session data through
the bridge (`lineup/session-data/replace`, with the revision it last read) and reads it
(`get`, or `subscribe` on a mount or a reload). `SessionLog` keeps, per instance, every value
it sent (each unique), every write the runtime acknowledged (revision and value), and every
read with what had been acknowledged before it was sent. `check_session_data` compares that
with the store's rows once the runtime stopped (`stored_session_data`, read-only):

- each acknowledged revision is acknowledged once (two different values at one revision: an
  acknowledged write lost under another);
- the stored revision is at least the newest acknowledged one; at that revision the stored
  value is the acknowledged one; past it, a value the drill sent (a write whose answer was
  lost may have landed), never one nobody wrote;
- a read sent after an acknowledgement returns that revision or a later one, and at that
  revision that value;
- no session data is written after its instance ended (`check_no_write_after_end`: the
  store's own times, one clock), as focus promises: nobody writes it any more.

Pure functions of their inputs, so a test feeds them broken evidence and sees them fail.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._check import Invariant, _readonly

__all__ = [
    "ENDED",
    "PadLog",
    "SessionLog",
    "check_no_write_after_end",
    "check_session_data",
    "stored_session_data",
    "write_and_end_times",
]

ENDED = ("stopped", "failed")  # an instance's final states (the store's CHECK)

Value = dict[str, Any]


@dataclass
class PadLog:
    sent: list[Value] = field(default_factory=list)
    acks: list[tuple[int, Value]] = field(default_factory=list)  # (revision, value)
    # (the newest acknowledged before it was sent, or None; the revision and value read)
    reads: list[tuple[tuple[int, Value] | None, int, Value | None]] = field(default_factory=list)

    def newest(self) -> tuple[int, Value] | None:
        return max(self.acks, key=lambda ack: ack[0], default=None)


@dataclass
class SessionLog:
    pads: dict[str, PadLog] = field(default_factory=dict)  # instance id -> its log

    def of(self, instance_id: str) -> PadLog:
        return self.pads.setdefault(instance_id, PadLog())

    def sent(self, instance_id: str, value: Value) -> None:
        self.of(instance_id).sent.append(value)

    def acked(self, instance_id: str, revision: int, value: Value) -> None:
        self.of(instance_id).acks.append((revision, value))

    def read(
        self, instance_id: str, floor: tuple[int, Value] | None, revision: int, value: Value | None
    ) -> None:
        self.of(instance_id).reads.append((floor, revision, value))


def stored_session_data(store_db: Path, app_scope: str) -> dict[str, tuple[int, Value | None]]:
    """The store's session data of `app_scope`'s instances: instance id -> (revision, data)."""
    with _readonly(store_db) as db:
        return {
            str(instance_id): (int(revision), None if data is None else json.loads(data))
            for instance_id, revision, data in db.execute(
                "SELECT app_session_id, revision, data FROM session_data WHERE app_scope = ?",
                (app_scope,),
            )
        }


def check_session_data(log: SessionLog, stored: dict[str, tuple[int, Value | None]]) -> Invariant:
    rule = Invariant(
        "surface_session_data_keeps_acknowledged",
        "every Surface write the runtime acknowledged is acknowledged once per revision and is "
        "in the store, or a later revision of a value the drill sent; every read after an "
        "acknowledgement returns that revision or a later one",
    )
    for instance_id, pad in sorted(log.pads.items()):
        by_revision: dict[int, Value] = {}
        for acked, sent in pad.acks:
            if by_revision.setdefault(acked, sent) != sent:
                rule.breach(f"{instance_id}: two values acknowledged at revision {acked}")
        for floor, read, got in pad.reads:
            if floor is None:
                continue
            if read < floor[0]:
                rule.breach(f"{instance_id}: read revision {read} after {floor[0]} was acked")
            elif read == floor[0] and got != floor[1]:
                rule.breach(f"{instance_id}: read another value at acked revision {read}")
        newest = pad.newest()
        if newest is None:
            continue
        row = stored.get(instance_id)
        if row is None:
            rule.breach(f"{instance_id}: acked revision {newest[0]}, no row in the store")
            continue
        revision, value = row
        if revision < newest[0]:
            rule.breach(f"{instance_id}: stored revision {revision}, acked {newest[0]}")
        elif revision == newest[0] and value != newest[1]:
            rule.breach(f"{instance_id}: stored another value at acked revision {revision}")
        elif revision > newest[0] and value not in pad.sent:
            rule.breach(f"{instance_id}: stored revision {revision} holds a value nobody sent")
    return rule


def write_and_end_times(store_db: Path, app_scope: str) -> dict[str, tuple[float, float | None]]:
    """Per instance of `app_scope` with session data: when it was last written, and when the
    instance ended (its row's last update in a final state), None while it is live."""
    marks = ", ".join("?" * len(ENDED))
    with _readonly(store_db) as db:
        return {
            str(instance_id): (float(written), None if ended is None else float(ended))
            for instance_id, written, ended in db.execute(
                "SELECT s.app_session_id, s.updated_at, i.updated_at FROM session_data s"
                " LEFT JOIN instances i ON i.instance_id = s.app_session_id"
                f" AND i.app_scope = s.app_scope AND i.state IN ({marks})"
                " WHERE s.app_scope = ?",
                (*ENDED, app_scope),
            )
        }


def check_no_write_after_end(times: dict[str, tuple[float, float | None]]) -> Invariant:
    rule = Invariant(
        "surface_session_data_closed_with_its_instance",
        "no session data of a Surface's instance is written after the instance ended",
    )
    for instance_id, (written, ended) in sorted(times.items()):
        if ended is not None and written > ended:
            rule.breach(f"{instance_id}: written {written - ended:.3f} s after it ended")
    return rule
