"""`card(...)`: a view for the Shell's generic `card` component, ready for `app.ui.render`.

The card is the runtime's own component (not an app's), so any app may show one, installed and
development apps included: a title, a text, label/value fields, an optional progress bar and
up to `MAX_CARD_ACTIONS` buttons, and an optional countdown to a time (`ends_at`) that the Shell
redraws itself, once a second, with the progress from `started_at` (so a timer's card changes
without a render per second through the store). The Shell draws every part as text, never as
markup; a button
pressed is the app's `on_ui_event` with `{"kind": "card.action", "action": <its id>}` (the app
decides what it means, as for any user action on its view). This only builds the dict; focus bounds
it (`p.MAX_VIEW_BYTES`) when the app renders it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from lineup.actors.kernel import ErrorCode, LineUpError

__all__ = ["CARD_ACTION", "CARD_KIND", "MAX_CARD_ACTIONS", "card"]

CARD_KIND: Final = "card"
CARD_ACTION: Final = "card.action"  # the `kind` of the user's press of a card's button
MAX_CARD_ACTIONS: Final = 4
MAX_ACTION_LABEL: Final = 40
ACTION_ID: Final = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")


def card(
    *,
    title: str,
    text: str = "",
    fields: Mapping[str, str] | None = None,
    progress: float | None = None,
    actions: Mapping[str, str] | None = None,
    countdown: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The view `{"kind": "card", "title", "text", "fields": [{"label", "value"}...]}`, with
    `"progress"` (0..1) and `"actions": [{"id", "label"}...]` (id → button label, in order)
    when given; `fields` keep their order. `countdown` is `(started_at, ends_at)` in wall-clock
    seconds: `"countdown": {"started_at", "ends_at"}`, the time left the Shell shows and counts
    down (and the progress, unless `progress` is given). Raises `LineUpError`
    (`invalid_arguments`) for a countdown that does not end after it starts, a progress outside
    0..1, more than `MAX_CARD_ACTIONS` actions, an id that is not a short
    machine word or a label empty or over `MAX_ACTION_LABEL`; never does I/O."""
    view: dict[str, Any] = {
        "kind": CARD_KIND,
        "title": title,
        "text": text,
        "fields": [{"label": label, "value": value} for label, value in (fields or {}).items()],
    }
    if progress is not None:
        if not (math.isfinite(progress) and 0.0 <= progress <= 1.0):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "card progress must be within 0..1")
        view["progress"] = float(progress)
    if countdown is not None:
        started_at, ends_at = countdown
        if not (math.isfinite(started_at) and math.isfinite(ends_at) and started_at < ends_at):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "a countdown ends after its start")
        view["countdown"] = {"started_at": float(started_at), "ends_at": float(ends_at)}
    if actions:
        if len(actions) > MAX_CARD_ACTIONS:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "too many card actions")
        for action_id, label in actions.items():
            if not ACTION_ID.match(action_id) or not 0 < len(label.strip()) <= MAX_ACTION_LABEL:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "a card action's id or label")
        view["actions"] = [{"id": i, "label": label} for i, label in actions.items()]
    return view
