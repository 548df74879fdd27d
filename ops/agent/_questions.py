"""What the demo Agent says and asks on its tour (`_tour.py`): the requests of each kind, in
the shapes of seed 003 §3.4, and the Markdown that says back what the user answered. Pure data
and text; all text from the user is escaped before it goes into Markdown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "CHOICE",
    "CONFIRM",
    "INPUT",
    "MAX_ECHO_CHARS",
    "MENU_ACTIONS",
    "MENU_PROMPT",
    "NOTICE",
    "PROGRESS",
    "QUESTIONS",
    "answer_text",
    "code_span",
    "echo",
    "markdown_text",
    "menu_request",
    "progress_request",
]

MAX_ECHO_CHARS: Final = 2_000
NOTICE, CHOICE, CONFIRM, INPUT = (
    "interaction.notice",
    "interaction.choice",
    "interaction.confirm",
    "interaction.input",
)
MENU_PROMPT: Final = "What would you like to try?"
MENU_ACTIONS: Final = (
    ("notice", "A notice", "Something to read."),
    ("choice", "A choice", "Pick one or more of a few options."),
    ("confirm", "A confirmation", "Yes or no."),
    ("input", "A form", "A few fields to fill in."),
    ("dashboard", "The Task Dashboard", "A MiniApp, with a question of its own."),
)
PROGRESS: Final = (
    ("p25", "A quarter done", 25),
    ("p60", "More than half", 60),
    ("p100", "Finished", 100),
)
_FRUITS: Final = (
    ("apple", "Apple"),
    ("banana", "Banana"),
    ("cherry", "Cherry"),
    ("durian", "Durian"),
)

QUESTIONS: Final[Mapping[str, tuple[str, dict[str, Any]]]] = {
    "notice": (
        NOTICE,
        {
            "title": "A notice",
            # A card's texts are text, never Markdown (docs/agent-protocol.md): no `**` here.
            "message": "This is a notice: the Agent tells you something, and it needs no answer.",
            "acknowledge_label": "Got it",
        },
    ),
    "choice": (
        CHOICE,
        {
            "title": "A choice",
            "prompt": "Which fruits do you like? Pick as many as you want.",
            "mode": "multi-choice",
            "actions": [{"id": i, "label": label} for i, label in _FRUITS],
        },
    ),
    "confirm": (
        CONFIRM,
        {
            "title": "A confirmation",
            "prompt": "Do you like what you have seen so far?",
            "approve_label": "Yes",
            "cancel_label": "Not yet",
        },
    ),
    "input": (
        INPUT,
        {
            "title": "A form",
            "prompt": "Tell me a little about yourself. Only the name is required.",
            "fields": [
                {
                    "id": "name",
                    "label": "Your name",
                    "type": "text",
                    "required": True,
                    "max_length": 80,
                    "placeholder": "Ada",
                },
                {
                    "id": "cups",
                    "label": "Cups of tea a day",
                    "type": "number",
                    "minimum": 0,
                    "maximum": 50,
                },
                {
                    "id": "note",
                    "label": "Anything else?",
                    "type": "textarea",
                    "max_length": 1000,
                },
            ],
            "submit_label": "Send",
        },
    ),
}


def menu_request(with_dashboard: bool) -> dict[str, Any]:
    """The menu card: one button per thing to try (the dashboard only where it is offered)."""
    actions = [{"id": i, "label": label, "description": d} for i, label, d in MENU_ACTIONS]
    return {
        "title": "Try LineUp",
        "prompt": MENU_PROMPT,
        "mode": "button",
        "actions": actions if with_dashboard else actions[:-1],
    }


def progress_request() -> dict[str, Any]:
    """The question the dashboard's sub-session gets (shown above the dashboard)."""
    return {
        "title": "Task progress",
        "prompt": "How far along is the task? I will move the dashboard to match.",
        "mode": "single-choice",
        "actions": [{"id": i, "label": label} for i, label, _ in PROGRESS],
    }


def markdown_text(text: str) -> str:
    """`text` as literal Markdown inline text: every punctuation mark that could start markup
    escaped, line breaks as spaces (it goes into a table cell or a sentence)."""
    out = []
    for char in " ".join(text.split()):
        out.append("\\" + char if char in "\\`*_{}[]()<>#+-.!|~&" else char)
    return "".join(out)


def code_span(text: str) -> str:
    """`text` as inline code, or as escaped text when it holds a backtick. Never escaped
    inside the span: Markdown shows a code span's backslashes as they are."""
    return markdown_text(text) if "`" in text or not text.strip() else f"`{text}`"


def echo(markdown: str) -> str:
    """The demo's answer to one user message: the text quoted back, shortened if long."""
    text = markdown if len(markdown) <= MAX_ECHO_CHARS else markdown[:MAX_ECHO_CHARS] + "…"
    quoted = "\n".join(f"> {line}" if line else ">" for line in text.splitlines() or [""])
    return f"You said:\n\n{quoted}"


def answer_text(purpose: str, request: dict[str, Any], result: dict[str, Any]) -> str:
    """What the Agent says back once a question of `purpose` (its kind) got `result`."""
    if purpose == "notice":
        seen = "and you acknowledged it" if result.get("acknowledged") else "in the chat"
        return f"The notice was shown {seen}."
    if purpose == "choice":
        labels = {str(a["id"]): str(a["label"]) for a in request.get("actions", [])}
        chosen = [labels.get(str(i), str(i)) for i in result.get("action_ids") or []]
        picked = ", ".join(f"**{markdown_text(label)}**" for label in chosen) or "nothing"
        return f"You picked {picked}."
    if purpose == "confirm":
        return "You answered **yes**." if result.get("approved") else "You answered **no**."
    values = result.get("values")
    values = values if isinstance(values, dict) else {}
    rows = ["| Field | Your answer |", "| --- | --- |"]
    for spec in request.get("fields", []):
        value = values.get(spec["id"])
        shown = "—" if value is None or value == "" else markdown_text(str(value))
        rows.append(f"| {markdown_text(str(spec['label']))} | {shown} |")
    return "Here is what you filled in:\n\n" + "\n".join(rows)
