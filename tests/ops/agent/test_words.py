"""The demo Agent says a code as the Shell does: a sentence, then the code in a details line."""

from __future__ import annotations

from lineup.ops.agent._words import SENTENCES, details_line, explained, sentence_for
from lineup.tests.support.shell_words import shell_sentences


def test_each_sentence_of_the_agent_is_the_shells_for_the_same_code() -> None:
    shell = shell_sentences()
    assert {code: shell.get(code) for code in SENTENCES} == dict(SENTENCES)


def test_a_known_code_is_a_sentence_and_the_code_only_in_the_details_line() -> None:
    said = explained("`a.b` was **refused**.", "tool_not_advertised")
    lead, details = said.split("\n\n")
    assert lead == "`a.b` was **refused**. No app on this LineUp offers that tool."
    assert "tool_not_advertised" not in lead
    assert details == "*Details: `tool_not_advertised`*"


def test_an_apps_own_code_adds_nothing_but_its_details_line() -> None:
    assert explained("The round could not start.", "round_full") == (
        "The round could not start.\n\n*Details: `round_full`*"
    )
    assert sentence_for("round_full") == sentence_for(None) == "That could not be done."


def test_an_odd_code_or_pointer_from_the_runtime_is_escaped_and_bounded() -> None:
    line = details_line("a`b" + "x" * 100, "/a`b")
    assert "a\\`b" in line and len(line) < 300
    assert details_line("x", "") == "*Details: `x`, at the whole input*"
