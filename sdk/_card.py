"""`card(...)`: a view for the Shell's generic `card` component, ready for `app.ui.render`.

The card is the runtime's own component (not an app's), so any app may show one, installed and
development apps included: a title, a text, label/value fields and an optional progress bar.
The Shell draws every part as text, never as markup. This only builds the dict; focus bounds
it (`p.MAX_VIEW_BYTES`) when the app renders it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from lineup.actors.kernel import ErrorCode, LineUpError

__all__ = ["CARD_KIND", "card"]

CARD_KIND: Final = "card"


def card(
    *,
    title: str,
    text: str = "",
    fields: Mapping[str, str] | None = None,
    progress: float | None = None,
) -> dict[str, Any]:
    """The view `{"kind": "card", "title", "text", "fields": [{"label", "value"}...]}`, with
    `"progress"` (0..1) when given; `fields` keep their order. Raises `LineUpError`
    (`invalid_arguments`) for a progress outside 0..1; never does I/O."""
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
    return view
