"""What the demo Agent writes reads as it should in the Shell (issue 28, item 4): a code span
shows its text as it is, never a backslash escape, and a question's texts (shown as text, never
as Markdown: docs/agent-protocol.md) carry no Markdown markup."""

from __future__ import annotations

from typing import Any

import pytest

from lineup.hostbridge._markdown import markdown_tree
from lineup.ops.agent._questions import (
    QUESTIONS,
    code_span,
    menu_request,
    progress_request,
)


@pytest.mark.parametrize("raw", ["app_closed", "art_fe9e_1", "a*b*c", "x\\y", "[l](u)", "#1"])
def test_a_code_span_shows_its_text_as_it_is(raw: str) -> None:
    assert markdown_tree(code_span(raw)) == [{"t": "p", "c": [{"t": "code", "v": raw}]}]


@pytest.mark.parametrize("raw", ["a`b", "``", "`app_closed`"])
def test_text_with_a_backtick_is_shown_as_escaped_text_instead(raw: str) -> None:
    assert markdown_tree(f"x {code_span(raw)} y") == [
        {"t": "p", "c": [{"t": "text", "v": f"x {raw} y"}]}
    ]


def _texts(request: dict[str, Any]) -> list[str]:
    texts = [request[k] for k in ("title", "prompt", "message") if k in request]
    for part in (*request.get("actions", ()), *request.get("fields", ())):
        texts += [part[k] for k in ("label", "description", "placeholder") if k in part]
    return texts


def test_the_demo_questions_texts_are_plain_text_with_no_markdown_markup() -> None:
    requests = [r for _, r in QUESTIONS.values()]
    requests += [menu_request(True), progress_request()]
    for request in requests:
        for text in _texts(request):
            # Read as Markdown, each is one paragraph of just its own text: nothing to leak.
            assert markdown_tree(text) == [{"t": "p", "c": [{"t": "text", "v": text}]}], text
