"""The App Registry says a code as the Shell does (core/words.js), and never shows a code as
its words."""

from __future__ import annotations

from lineup.miniapps.app_registry import _view
from lineup.tests.support.shell_words import shell_sentences


def test_each_sentence_of_the_registry_is_the_shells_for_the_same_code() -> None:
    shell = shell_sentences()
    mine = dict(_view._SENTENCES)
    assert {code: shell.get(code) for code in mine} == mine


def test_a_code_the_registry_does_not_know_reads_as_the_general_sentence() -> None:
    assert _view.sentence_for("something_new") == "That could not be done."
    assert _view.sentence_for(None) == "That could not be done."
