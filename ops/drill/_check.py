"""The drill's invariants, checked after quiescence from the AppServer's own record and the
runtime's store — never from what the runtime says about itself.

Theory of operation: `Evidence.read` opens both SQLite files read-only once the runtime has
stopped, and keeps the rows that matter; `check` compares them with `Expected` (what the load
Agent posted and what the Shell user typed, in order) and returns one `Invariant` per rule,
each with a boolean `passed`, a count of violations and a few examples (ids only: no text).
Pure functions of their inputs, so a test can feed them a broken record and see them fail.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import apsw

from lineup.actors.store.messages import FINAL_TOOL_CALL_STATES
from lineup.facts.interactions import FINAL as FINAL_INTERACTIONS

__all__ = [
    "ENDINGS",
    "Evidence",
    "Expected",
    "Invariant",
    "check",
    "interaction_endings",
    "to_agent",
]

TERMINAL_STATES: Final = FINAL_TOOL_CALL_STATES
TERMINAL_TYPES: Final = frozenset({"lineup.v1.tool.result", "lineup.v1.tool.error"})
LIVE_INSTANCE_STATES: Final = frozenset({"starting", "foreground", "background", "suspended"})
ANSWERED_STATES: Final = frozenset({"completed", "submitted"})  # the Agent got the result
# The error codes the Agent may get for an interaction, by the interaction's final state.
CANCEL_CODES: Final = frozenset({"cancelled_by_user", "interaction_dismissed", "app_closed"})
EXPIRY_CODES: Final = frozenset({"operation_expired", "expired"})
STALE: Final = "inventory_revision_mismatch"  # the Agent asked with an old revision
QUOTA: Final = "quota_exceeded"  # the Agent had as many questions open as it may
# How each of the drill's scripts may end (`_asking`): what only one side acts on ends one
# way; a race ends the way of one of its two sides, never a third.
ENDINGS: Final[dict[str, frozenset[str]]] = {
    "answer": frozenset({"completed"}),
    "double": frozenset({"completed"}),
    "cancel": frozenset({"cancelled"}),
    "dismiss": frozenset({"cancelled"}),
    "expire": frozenset({"expired"}),
    "race": frozenset({"completed", "cancelled"}),  # the user's answer, or the Agent's dismiss
    "expire_race": frozenset({"completed", "expired"}),  # the user's answer, or the expiry
}
_EXAMPLES: Final = 5


@dataclass(frozen=True)
class Expected:
    agent_texts: tuple[str, ...]  # message ids the Agent posted for the chat
    calls: tuple[str, ...]  # call ids the Agent posted
    user_messages: tuple[str, ...]  # message ids the user typed, in order
    escalation_asked: bool = False
    poison: tuple[tuple[str, str], ...] = ()  # (message id, the code it must be refused with)
    # The Agent's questions: (call id, kind, the drill's script, names no real sub-session)
    interactions: tuple[tuple[str, str, str, bool], ...] = ()


@dataclass(frozen=True)
class InteractionRecord:
    interaction_id: str
    call_id: str | None
    state: str
    terminal_code: str | None = None
    result: Any = None


@dataclass
class Evidence:
    # AppServer: (message_id, type, payload) in its own order, per direction
    to_client: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    to_agent: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    # runtime store
    inbound: Counter[str] = field(default_factory=Counter)  # message_id -> rows
    inbox: dict[tuple[str, str], bool] = field(default_factory=dict)  # (scope, id) -> acked
    calls: dict[str, str] = field(default_factory=dict)  # call_id -> state
    outbox_pending: int = 0
    instances: dict[str, str] = field(default_factory=dict)  # instance_id -> state
    stack: list[str] = field(default_factory=list)  # bottom first
    exit_code: int | None = None  # the runtime's, after SIGTERM
    refused: dict[str, set[str]] = field(default_factory=dict)  # message id -> refusal codes
    interactions: list[InteractionRecord] = field(default_factory=list)

    @classmethod
    def read(cls, appserver_db: Path, store_db: Path, exit_code: int | None) -> Evidence:
        evidence = cls(exit_code=exit_code)
        with _readonly(store_db) as db:
            # The wire id of a user's message is the runtime's; the chat's is its client id.
            client_of = dict(
                db.execute("SELECT message_id, client_id FROM messages WHERE client_id IS NOT NULL")
            )
        with _readonly(appserver_db) as db:
            for direction, message_id, envelope in db.execute(
                "SELECT direction, message_id, envelope FROM messages ORDER BY position"
            ):
                body = json.loads(envelope)
                known = str(client_of.get(message_id, message_id))
                row = (known, str(body.get("type")), body.get("payload") or {})
                (evidence.to_agent if direction == "to_agent" else evidence.to_client).append(row)
        with _readonly(store_db) as db:
            for (message_id,) in db.execute(
                "SELECT message_id FROM messages WHERE direction = 'inbound'"
            ):
                evidence.inbound[str(message_id)] += 1
            for scope, delivery_id, acked in db.execute(
                "SELECT app_scope, delivery_id, acked_at IS NOT NULL FROM app_inbox"
            ):
                evidence.inbox[(str(scope), str(delivery_id))] = bool(acked)
            for call_id, state in db.execute("SELECT call_id, state FROM tool_calls"):
                evidence.calls[str(call_id)] = str(state)
            for (pending,) in db.execute("SELECT count(*) FROM outbox WHERE acked_at IS NULL"):
                evidence.outbox_pending = int(pending)
            for instance_id, state in db.execute("SELECT instance_id, state FROM instances"):
                evidence.instances[str(instance_id)] = str(state)
            for subject_id, code in db.execute(
                "SELECT subject_id, code FROM audit WHERE event IN"
                " ('transport.envelope_refused', 'router.envelope_rejected')"
                " AND subject_id IS NOT NULL"
            ):
                evidence.refused.setdefault(str(subject_id), set()).add(str(code))
            cursor = db.execute("SELECT * FROM interactions")
            for row in cursor:
                names = [d[0] for d in cursor.getdescription()]
                record = dict(zip(names, row, strict=True))
                result = record.get("result", record.get("answer"))
                evidence.interactions.append(
                    InteractionRecord(
                        str(record["interaction_id"]),
                        None if record.get("call_id") is None else str(record["call_id"]),
                        str(record["state"]),
                        record.get("terminal_code"),
                        json.loads(result) if isinstance(result, str) else result,
                    )
                )
            evidence.stack = [
                str(i)
                for (i,) in db.execute("SELECT instance_id FROM focus_stack ORDER BY position")
            ]
        return evidence


def to_agent(runtime_dir: Path) -> list[dict[str, Any]]:
    """Every message the AppServer passed to the Agent, in order (its record, read-only)."""
    with _readonly(runtime_dir / "devserver.db") as db:
        rows = db.execute(
            "SELECT envelope FROM messages WHERE direction = 'to_agent' ORDER BY position"
        ).fetchall()
    return [json.loads(str(envelope)) for (envelope,) in rows]


class _readonly:
    def __init__(self, path: Path) -> None:
        self.connection = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)

    def __enter__(self) -> apsw.Connection:
        return self.connection

    def __exit__(self, *_: object) -> None:
        self.connection.close()


@dataclass
class Invariant:
    name: str
    description: str
    passed: bool = True
    violations: int = 0
    examples: list[str] = field(default_factory=list)

    def breach(self, example: str) -> None:
        self.passed = False
        self.violations += 1
        if len(self.examples) < _EXAMPLES:
            self.examples.append(example)


def check(expected: Expected, evidence: Evidence) -> list[Invariant]:
    # Every call at the AppServer is someone's: the load Agent's, or another Agent's (an
    # exercise's `lineup mcp`, whose call ids the drill never sees): each is held to the rules.
    posted = (
        str(payload.get("call_id"))
        for _, kind, payload in evidence.to_client
        if kind == "lineup.v1.tool.call"
    )
    expected = replace(expected, calls=tuple(dict.fromkeys((*expected.calls, *posted))))
    return [
        _agent_messages(expected, evidence),
        _calls_in_store(expected, evidence),
        _calls_at_agent(expected, evidence),
        _no_open_call(evidence),
        _user_messages(expected, evidence),
        _outbox_drained(evidence),
        _focus_stack(evidence),
        _no_escalation(expected, evidence),
        _poison_refused(expected, evidence),
        _interactions(expected, evidence),
    ]


def _state_of(code: str) -> str:
    if code in CANCEL_CODES:
        return "cancelled"
    return "expired" if code in EXPIRY_CODES else "failed"


def _interactions(expected: Expected, evidence: Evidence) -> Invariant:
    rule = Invariant(
        "interactions_one_terminal_state",
        "every interaction has exactly one final state in the store; the Agent got at most one "
        "terminal message per question, agreeing with it (a result: completed or submitted, "
        "with the stored result; an error: cancelled, expired or failed, by its code); a "
        "question naming no real sub-session created none",
    )
    by_call: dict[str, list[InteractionRecord]] = {}
    for record in evidence.interactions:
        if record.state not in FINAL_INTERACTIONS:
            rule.breach(f"{record.interaction_id}: {record.state}")
        if record.call_id is not None:
            by_call.setdefault(record.call_id, []).append(record)
    terminals: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for _, kind, payload in evidence.to_agent:
        if kind in TERMINAL_TYPES:
            terminals.setdefault(str(payload.get("call_id")), []).append((kind, payload))
    asked = {call_id for call_id, _, _, _ in expected.interactions}
    for call_id in by_call.keys() - asked:
        rule.breach(f"{call_id}: an interaction for a question nobody asked")
    for call_id, kind, script, bogus in expected.interactions:
        records, got = by_call.get(call_id, []), terminals.get(call_id, [])
        if len(got) > 1:
            rule.breach(f"{call_id}: {len(got)} terminal messages at the Agent")
            continue
        if bogus:
            codes = [p.get("code") for k, p in got if k == "lineup.v1.tool.error"]
            # Refused either way: for its sub-session, or first for an inventory revision an
            # update made stale while it was posted (the Agent's own doing).
            if records or codes not in (["app_session_invalid"], [STALE]):
                rule.breach(f"{call_id}: a bogus sub-session gave {len(records)} rows, {codes}")
            continue
        codes = [p.get("code") for k, p in got if k == "lineup.v1.tool.error"]
        if not records and codes in ([STALE], [QUOTA]):
            continue  # refused at the checks, before any interaction: the Agent's own doing
        if len(records) != 1:
            rule.breach(f"{call_id}: {len(records)} interactions")
            continue
        (record,) = records
        if got:
            message_type, payload = got[0]
            if message_type == "lineup.v1.tool.result":
                if record.state not in ANSWERED_STATES:
                    rule.breach(f"{call_id}: the Agent got a result, the store {record.state}")
                elif record.result is not None and payload.get("result") != record.result:
                    rule.breach(f"{call_id}: the Agent's result is not the stored one")
            elif _state_of(str(payload.get("code"))) != record.state:
                rule.breach(
                    f"{call_id}: the Agent got {payload.get('code')}, the store {record.state}"
                )
        # A notice is answered by the runtime itself as soon as it is shown: no script.
        ends = ENDINGS.get(script) if kind != "notice" else None
        if ends is not None and record.state not in ends:
            rule.breach(f"{call_id}: scripted {script} but ended {record.state}")
    return rule


def interaction_endings(expected: Expected, evidence: Evidence) -> dict[str, dict[str, int]]:
    """How the Agent's questions ended, by script (`notice` and `bogus_sub_session` apart: no
    script decides their end): the store's state of each one's interaction, `refused:CODE`
    when none was created, `open` when the Agent got nothing and the store has no row."""
    state_of: dict[str, str] = {}
    for record in evidence.interactions:
        if record.call_id is not None:
            state_of[record.call_id] = record.state
    refused: dict[str, str] = {}
    for _, kind, payload in evidence.to_agent:
        if kind == "lineup.v1.tool.error":
            refused.setdefault(str(payload.get("call_id")), str(payload.get("code")))
    endings: dict[str, Counter[str]] = {}
    for call_id, kind, script, bogus in expected.interactions:
        group = "bogus_sub_session" if bogus else "notice" if kind == "notice" else script
        if call_id in state_of:
            ending = state_of[call_id]
        else:
            ending = f"refused:{refused[call_id]}" if call_id in refused else "open"
        endings.setdefault(group, Counter())[ending] += 1
    return {group: dict(sorted(c.items())) for group, c in sorted(endings.items())}


def _poison_refused(expected: Expected, evidence: Evidence) -> Invariant:
    rule = Invariant(
        "poison_refused",
        "every envelope the runtime must refuse is at the AppServer once, refused with its "
        "code and audited, and never stored or delivered",
    )
    at_server = Counter(m for m, _, _ in evidence.to_client)
    for message_id, code in expected.poison:
        if at_server[message_id] != 1:
            rule.breach(f"{message_id}: {at_server[message_id]} times at the AppServer")
        elif evidence.inbound[message_id] or any(i == message_id for _, i in evidence.inbox):
            rule.breach(f"{message_id}: stored or delivered")
        elif code not in evidence.refused.get(message_id, set()):
            rule.breach(f"{message_id}: not refused {code}")
    return rule


def _agent_messages(expected: Expected, evidence: Evidence) -> Invariant:
    rule = Invariant(
        "agent_messages_delivered_once",
        "every Agent message is in the AppServer once, received by the runtime once, "
        "and delivered to its app and acknowledged",
    )
    at_server = Counter(m for m, _, _ in evidence.to_client)
    for message_id in expected.agent_texts:
        if at_server[message_id] != 1:
            rule.breach(f"{message_id}: {at_server[message_id]} times at the AppServer")
        elif evidence.inbound[message_id] != 1:
            rule.breach(f"{message_id}: received {evidence.inbound[message_id]} times")
        elif not evidence.inbox.get(("chat", message_id), False):
            state = "pending" if ("chat", message_id) in evidence.inbox else "missing"
            rule.breach(f"{message_id}: chat delivery {state}")
    return rule


def _calls_in_store(expected: Expected, evidence: Evidence) -> Invariant:
    rule = Invariant(
        "tool_calls_terminal_in_store",
        "every tool call has exactly one row in the store, in a terminal state",
    )
    for call_id in expected.calls:
        state = evidence.calls.get(call_id)
        if state not in TERMINAL_STATES:
            rule.breach(f"{call_id}: {state or 'no row'}")
    return rule


def _calls_at_agent(expected: Expected, evidence: Evidence) -> Invariant:
    rule = Invariant(
        "tool_calls_one_terminal_message",
        "every tool call has exactly one terminal message at the Agent, agreeing with the store",
    )
    terminals: dict[str, list[str]] = {}
    for _, kind, payload in evidence.to_agent:
        if kind in TERMINAL_TYPES:
            terminals.setdefault(str(payload.get("call_id")), []).append(kind)
    for call_id in expected.calls:
        got = terminals.get(call_id, [])
        if len(got) != 1:
            rule.breach(f"{call_id}: {len(got)} terminal messages")
            continue
        completed = evidence.calls.get(call_id) == "completed"
        if completed != (got[0] == "lineup.v1.tool.result"):
            rule.breach(f"{call_id}: store {evidence.calls.get(call_id)} but Agent got {got[0]}")
    for call_id in terminals.keys() - set(expected.calls):
        rule.breach(f"{call_id}: a terminal message for a call nobody made")
    return rule


def _no_open_call(evidence: Evidence) -> Invariant:
    rule = Invariant("no_call_left_open", "no tool call is left in a non-terminal state")
    for call_id, state in sorted(evidence.calls.items()):
        if state not in TERMINAL_STATES:
            rule.breach(f"{call_id}: {state}")
    return rule


def _user_messages(expected: Expected, evidence: Evidence) -> Invariant:
    rule = Invariant(
        "user_messages_once_in_order",
        "every message the user typed is at the Agent exactly once, in the order typed",
    )
    texts = [m for m, kind, _ in evidence.to_agent if kind == "lineup.v1.text"]
    counts = Counter(texts)
    for message_id in expected.user_messages:
        if counts[message_id] != 1:
            rule.breach(f"{message_id}: {counts[message_id]} times at the Agent")
    typed = set(expected.user_messages)
    for message_id in counts.keys() - typed:
        rule.breach(f"{message_id}: at the Agent but never typed")
    arrived = [m for m in dict.fromkeys(texts) if m in typed]
    order = [m for m in expected.user_messages if m in counts]
    if arrived != order:
        first = next(i for i, (a, b) in enumerate(zip(arrived, order, strict=False)) if a != b)
        rule.breach(f"out of order from {order[first]} (arrived {arrived[first]} there)")
    return rule


def _outbox_drained(evidence: Evidence) -> Invariant:
    rule = Invariant("outbox_drained", "everything the runtime had to send reached the AppServer")
    if evidence.outbox_pending:
        rule.breach(f"{evidence.outbox_pending} outbox rows never acknowledged")
    return rule


def _focus_stack(evidence: Evidence) -> Invariant:
    rule = Invariant(
        "focus_stack_valid",
        "the focus stack holds only live instances, each once, at most one in the foreground, "
        "and that one on top",
    )
    states = evidence.instances
    for instance_id in evidence.stack:
        if states.get(instance_id) not in LIVE_INSTANCE_STATES:
            rule.breach(f"{instance_id}: in the stack but {states.get(instance_id)}")
    foreground = [i for i, s in states.items() if s == "foreground"]
    if len(foreground) > 1:
        rule.breach(f"{len(foreground)} instances in the foreground")
    if foreground and evidence.stack and evidence.stack[-1] != foreground[0]:
        rule.breach(f"{foreground[0]} is in the foreground but not on top")
    for instance_id, state in states.items():
        if state in ("foreground", "background") and instance_id not in evidence.stack:
            rule.breach(f"{instance_id}: {state} but not in the stack")
    return rule


def _no_escalation(expected: Expected, evidence: Evidence) -> Invariant:
    rule = Invariant(
        "supervisor_never_escalated",
        "the supervisor never gave up on the tree (the runtime stopped cleanly when asked)",
    )
    if not expected.escalation_asked and evidence.exit_code != 0:
        rule.breach(f"the runtime exited with {evidence.exit_code}")
    return rule
