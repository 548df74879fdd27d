"""The demo Agent's tour of the standard interactions, without I/O: client messages in, moves out.

Theory of operation: `Tour.take(message)` reads one message the client (the LineUp runtime)
sent the Agent and answers the moves the Agent makes in response — `Say` (a text) and `Ask` (a
tool call) — each with an idempotency key derived from the message it answers, never from a
clock or a counter. So a restarted demo Agent, which syncs from the start again, replays the
same moves under the same keys, and the AppServer stores none of them twice.

The tour: once the inventory advertises `interaction.choice`, the Agent asks a menu ("What
would you like to try?"): a notice, a choice, a confirm, an input, or the Task Dashboard. On the
answer it asks a question of that kind (or launches the dashboard), says in Markdown what the
user answered, and asks the menu again. A dashboard's app sub-session gets a question of its
own (shown above the dashboard while it is in front): how far along the task is, which moves
the dashboard's progress; its answer gets a one-line short result said into that sub-session
(a text with `app_session_context`, shown in its group). A cancelled, dismissed or expired menu
is not asked again until the user writes "menu"; every other user text is echoed back, as
before. A new menu withdraws (`interaction.dismiss`) any older one still open in that
conversation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from lineup import wire

from ._questions import (
    CHOICE,
    MAX_ECHO_CHARS,
    MENU_ACTIONS,
    PROGRESS,
    QUESTIONS,
    answer_text,
    echo,
    markdown_text,
    menu_request,
    progress_request,
)
from ._words import explained

__all__ = [
    "CHOICE",
    "MAX_ECHO_CHARS",
    "MENU_ACTIONS",
    "MENU_WORD",
    "Ask",
    "Dismiss",
    "Move",
    "Say",
    "Tour",
    "echo",
    "markdown_text",
]

MENU_WORD: Final = "menu"
DASHBOARD_SCOPE: Final = "task-dashboard"
DASHBOARD_OPEN: Final = "task-dashboard.open"
DASHBOARD_UPDATE: Final = "task-dashboard.update"
WHITEBOARD_OPEN: Final = "whiteboard.open"
MAX_REVISION_RETRIES: Final = 3
MAX_OPEN_QUESTIONS: Final = 256  # what the Agent remembers asking; the oldest is forgotten

Purpose = Literal[
    "menu", "notice", "choice", "confirm", "input", "dashboard", "progress", "whiteboard"
]


@dataclass(frozen=True)
class Say:
    conversation_id: str
    markdown: str
    key: str
    app_session_id: str | None = None  # a short result of that sub-session, shown in its group


@dataclass(frozen=True)
class Ask:
    conversation_id: str
    tool: str
    input: dict[str, Any]
    call_id: str  # also its idempotency key
    revision: str
    app_session_id: str | None = None
    instance_id: str | None = None


@dataclass(frozen=True)
class Dismiss:
    conversation_id: str
    call_id: str  # the question withdrawn; `dismiss:<call_id>` is the key

    @property
    def key(self) -> str:
        return f"dismiss:{self.call_id}"


Move = Say | Ask | Dismiss


@dataclass
class _Question:
    purpose: Purpose
    conversation_id: str
    tool: str
    input: dict[str, Any]
    app_session_id: str | None = None
    instance_id: str | None = None
    retries: int = 0


def _picture_name(result: dict[str, Any]) -> str:
    """The board's picture by the name the Whiteboard gave it (its first artifact, the PNG),
    in bold; "" for a result without one."""
    artifacts = result.get("artifacts")
    first = artifacts[0] if isinstance(artifacts, list) and artifacts else None
    name = first.get("name") if isinstance(first, dict) else None
    if not isinstance(name, str) or not name.strip():
        return ""
    return f"**{markdown_text(name[:128])}**"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


@dataclass
class Tour:
    """One demo Agent's memory of its tour, per conversation. Not thread-safe; pure."""

    revisions: dict[str, str] = field(default_factory=dict)  # conversation -> newest inventory
    tools: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # conv -> tools
    questions: dict[str, _Question] = field(default_factory=dict)  # call_id -> what it asked
    toured: set[str] = field(default_factory=set)  # conversations whose first menu was asked
    launching: dict[str, list[str]] = field(default_factory=dict)  # conv -> task ids, oldest 1st
    tasks: dict[str, str] = field(default_factory=dict)  # dashboard instance_id -> task id

    # --------------------------------------------------------------------------- intake

    def take(self, message: dict[str, Any]) -> list[Move]:
        """The moves answering one client message (none for what the tour ignores)."""
        kind = message.get("type")
        payload = message.get("payload")
        conversation_id = message.get("conversation_id")
        if not isinstance(payload, dict) or not isinstance(conversation_id, str):
            return []
        if kind == wire.INVENTORY:
            return self._inventory(conversation_id, payload)
        if kind == wire.TEXT:
            return self._text(conversation_id, message, payload)
        if kind == wire.RESULT:
            return self._result(payload)
        if kind == wire.TOOL_ERROR:
            return self._error(payload)
        if kind == wire.APP_SESSION_OPENED:
            return self._opened(conversation_id, payload)
        if kind == wire.APP_SESSION_CLOSED:
            return self._closed(conversation_id, payload)
        return []

    def _inventory(self, conversation_id: str, payload: dict[str, Any]) -> list[Move]:
        revision, tools = payload.get("revision"), payload.get("tools")
        if not isinstance(revision, str | int) or not isinstance(tools, list):
            return []
        self.revisions[conversation_id] = str(revision)
        self.tools[conversation_id] = {
            str(t["method"]): t for t in tools if isinstance(t, dict) and "method" in t
        }
        if conversation_id in self.toured or CHOICE not in self.tools[conversation_id]:
            return []
        self.toured.add(conversation_id)
        return self._menu(conversation_id, f"demo-menu-{_digest(conversation_id)}")

    def _text(
        self, conversation_id: str, message: dict[str, Any], payload: dict[str, Any]
    ) -> list[Move]:
        sender = message.get("sender")
        markdown, message_id = payload.get("markdown"), message.get("id")
        if not isinstance(sender, dict) or sender.get("kind") != "user":
            return []
        if not isinstance(markdown, str) or not isinstance(message_id, str):
            return []
        if markdown.strip().lower() == MENU_WORD and self._offers(conversation_id, CHOICE):
            self.toured.add(conversation_id)
            return self._menu(conversation_id, f"demo-menu-{_digest(message_id)}")
        return [Say(conversation_id, echo(markdown), f"reply:{message_id}")]

    def _result(self, payload: dict[str, Any]) -> list[Move]:
        call_id, result = payload.get("call_id"), payload.get("result")
        question = self.questions.pop(str(call_id), None)
        if question is None or not isinstance(result, dict):
            return []
        conv, key = question.conversation_id, f"answered:{call_id}"
        then = f"demo-menu-{_digest(str(call_id))}"
        if question.purpose == "menu":
            chosen = result.get("action_ids") or []
            return self._try(conv, str(chosen[0]) if chosen else "", str(call_id))
        if question.purpose == "progress":
            return self._progress(question, result, str(call_id))
        if question.purpose == "dashboard":
            status = markdown_text(str(result.get("status", "closed")))
            return [
                Say(conv, f"The Task Dashboard closed: the task was **{status}**.", key),
                *self._whiteboard(conv, str(call_id)),
            ]
        if question.purpose == "whiteboard":
            name = _picture_name(result)
            text = "Thank you for the board: I have it as a picture" + (
                f", {name}." if name else "."
            )
            return [Say(conv, text, key), *self._menu(conv, then)]
        return [
            Say(conv, answer_text(question.purpose, question.input, result), key),
            *self._menu(conv, then),
        ]

    def _error(self, payload: dict[str, Any]) -> list[Move]:
        call_id, code = str(payload.get("call_id")), str(payload.get("code", ""))
        question = self.questions.pop(call_id, None)
        if question is None:
            return []
        conv, key = question.conversation_id, f"failed:{call_id}"
        if code in ("inventory_revision_mismatch", "stale_revision") and (
            question.retries < MAX_REVISION_RETRIES
        ):
            question.retries += 1
            return [self._ask(f"demo-retry-{_digest(call_id)}", question)]
        if question.purpose == "dashboard":
            return [Say(conv, explained("The Task Dashboard ended.", code), key)]
        if question.purpose == "whiteboard":
            return [Say(conv, explained("The Whiteboard ended.", code), key)]
        if question.purpose == "progress":
            return [Say(conv, explained("The dashboard's question ended unanswered.", code), key)]
        text = {
            "cancelled_by_user": "You closed the question without answering.",
            "interaction_dismissed": "I withdrew the question.",
            "operation_expired": "The question expired before anyone answered.",
            "expired": "The question expired before anyone answered.",
            "tool_not_advertised": "This runtime offers no standard interactions.",
        }.get(code)
        if question.purpose == "menu":
            again = f"Write `{MENU_WORD}` to see what I can show you."
            if text:
                return [Say(conv, f"{text} {again}", key)]
            said = explained("The menu could not be asked.", code) + f"\n\n{again}"
            return [Say(conv, said, key)]
        text = text or explained("The question could not be asked.", code)
        return [Say(conv, text, key), *self._menu(conv, f"demo-menu-{_digest(call_id)}")]

    def _opened(self, conversation_id: str, payload: dict[str, Any]) -> list[Move]:
        session, instance = payload.get("app_session_id"), payload.get("instance_id")
        waiting = self.launching.get(conversation_id)
        if payload.get("app_scope") != DASHBOARD_SCOPE or not waiting:
            return []
        if not isinstance(session, str) or not isinstance(instance, str):
            return []
        self.tasks[instance] = waiting.pop(0)
        question = _Question(
            "progress",
            conversation_id,
            CHOICE,
            progress_request(),
            app_session_id=session,
            instance_id=instance,
        )
        return [self._ask(f"demo-progress-{_digest(session)}", question)]

    def _closed(self, conversation_id: str, payload: dict[str, Any]) -> list[Move]:
        session = payload.get("app_session_id")
        self.tasks.pop(str(payload.get("instance_id")), None)
        if payload.get("app_scope") != DASHBOARD_SCOPE or not isinstance(session, str):
            return []
        # The launch call's own ending says the dashboard closed; this says only what is left.
        if not payload.get("pending_interaction_call_ids"):
            return []
        text = "The Task Dashboard closed, but its question stays open: answer it here."
        return [Say(conversation_id, text, f"closed:{session}")]

    # --------------------------------------------------------------------------- moves

    def _offers(self, conversation_id: str, tool: str) -> bool:
        return tool in self.tools.get(conversation_id, {})

    def _ask(self, call_id: str, question: _Question) -> Ask:
        while len(self.questions) >= MAX_OPEN_QUESTIONS:
            self.questions.pop(next(iter(self.questions)))
        self.questions[call_id] = question
        revision = self.revisions.get(question.conversation_id, "")
        return Ask(
            question.conversation_id,
            question.tool,
            question.input,
            call_id,
            revision,
            question.app_session_id,
            question.instance_id,
        )

    def _menu(self, conversation_id: str, call_id: str) -> list[Move]:
        menu = menu_request(with_dashboard=self._dashboard(conversation_id))
        # An older menu still open is withdrawn: one menu card waits at a time. Its error
        # (`interaction_dismissed`) then finds no question and says nothing.
        older = [
            Dismiss(conversation_id, old)
            for old, q in self.questions.items()
            if q.purpose == "menu" and q.conversation_id == conversation_id
        ]
        for move in older:
            del self.questions[move.call_id]
        return [*older, self._ask(call_id, _Question("menu", conversation_id, CHOICE, menu))]

    def _dashboard(self, conversation_id: str) -> bool:
        return self._offers(conversation_id, DASHBOARD_OPEN)

    def _try(self, conv: str, choice: str, call_id: str) -> list[Move]:
        then = f"demo-{choice}-{_digest(call_id)}"
        if choice in QUESTIONS:
            tool, tool_input = QUESTIONS[choice]
            purpose: Purpose = choice  # type: ignore[assignment]
            return [self._ask(then, _Question(purpose, conv, tool, tool_input))]
        if choice == "dashboard" and self._dashboard(conv):
            task_id = f"demo-{_digest(call_id)[:12]}"
            self.launching.setdefault(conv, []).append(task_id)
            opening = {"task_id": task_id, "title": "Try the Task Dashboard"}
            return [
                Say(
                    conv,
                    "Opening the **Task Dashboard**: it has a question for you.",
                    f"answered:{call_id}",
                ),
                self._ask(then, _Question("dashboard", conv, DASHBOARD_OPEN, opening)),
            ]
        return []

    def _whiteboard(self, conv: str, call_id: str) -> list[Move]:
        """The tour's last step, where the runtime offers it: a board to draw on."""
        if not self._offers(conv, WHITEBOARD_OPEN):
            return []
        digest = _digest(call_id)
        opening = {"board_id": f"demo-{digest[:12]}", "title": "Try the Whiteboard"}
        text = (
            "One more: a **Whiteboard**. Draw with the pen, the colours, the eraser and text "
            "boxes (P, E, T; Ctrl+Z undoes), then press **Submit** and confirm: I get the "
            "board as a picture."
        )
        return [
            Say(conv, text, f"whiteboard:{call_id}"),
            self._ask(
                f"demo-whiteboard-{digest}", _Question("whiteboard", conv, WHITEBOARD_OPEN, opening)
            ),
        ]

    def _progress(self, question: _Question, result: dict[str, Any], call_id: str) -> list[Move]:
        conv = question.conversation_id
        chosen = (result.get("action_ids") or [""])[0]
        percent = next((p for i, _, p in PROGRESS if i == chosen), None)
        task_id = self.tasks.get(question.instance_id or "")
        moves: list[Move] = []
        if percent is not None and task_id is not None:
            update = _Question(
                "progress",
                conv,
                DASHBOARD_UPDATE,
                {"task_id": task_id, "progress": percent},
                instance_id=question.instance_id,
            )
            ask = self._ask(f"demo-update-{_digest(call_id)}", update)
            self.questions.pop(ask.call_id)  # its answer needs no words
            moves.append(ask)
            # The answer's short result, in the sub-session the question was asked in.
            moves.append(
                Say(
                    conv,
                    f"Progress set to **{percent} %**: the dashboard shows it now.",
                    f"answered:{call_id}",
                    app_session_id=question.app_session_id,
                )
            )
        return [*moves, *self._menu(conv, f"demo-menu-{_digest(call_id)}")]
