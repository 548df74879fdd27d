"""The capability gateway's bookkeeping (`actors/gateway/_capability_state.py`): the host's
configuration read strictly, the sliding-minute rate limit, the LRU of results kept for
repeats, and the pending book that forgets what ended."""

from __future__ import annotations

import pytest

from lineup.actors.gateway._capability_state import (
    CapabilityConfig,
    PendingBook,
    PromptQuiet,
    RateLimiter,
    ResultCache,
)
from lineup.hostbridge.messages import CapabilityPromptView
from lineup.sdk.capabilities import CATALOG, DEFAULT_PROMPT_TIMEOUT_S
from lineup.sdk.protocol import CapabilityResult


def test_the_configuration_defaults_to_the_catalog_and_refuses_a_wrong_shape() -> None:
    default = CapabilityConfig.from_config(None)
    assert default.prompt_timeout_s == DEFAULT_PROMPT_TIMEOUT_S
    assert default.rate_of("file.open") == CATALOG["file.open"].rate_per_minute
    conf = CapabilityConfig.from_config(
        {"unsupported": ["file.open"], "policy": {"a": {"notification.show": "deny"}},
         "rate_per_minute": {"notification.show": 1}}
    )  # fmt: skip
    assert conf.unsupported == {"file.open"}
    assert conf.host_policy("a") == {"notification.show": "deny"} and conf.host_policy("b") == {}
    assert conf.rate_of("notification.show") == 1
    bad: list[dict[str, object]] = [
        {"policy": {"a": {"x.y": "maybe"}}},
        {"prompt_timeout_s": 0},
        {"prompt_quiet_s": -1},
        {"rate_per_minute": {"x.y": -1}},
    ]
    for wrong in bad:
        with pytest.raises(ValueError, match=r"policy|timeouts|rate"):
            CapabilityConfig.from_config(wrong)


def test_the_rate_limit_is_a_sliding_minute_per_app_and_capability() -> None:
    rate = RateLimiter()
    assert rate.take("a", "c.x", 2, 0.0) and rate.take("a", "c.x", 2, 30.0)
    assert not rate.take("a", "c.x", 2, 59.0)  # a refusal counts nothing
    assert rate.take("b", "c.x", 2, 59.0) and rate.take("a", "c.y", 2, 59.0)
    assert rate.take("a", "c.x", 2, 60.0)  # the first left the window
    assert not rate.take("a", "c.x", 0, 0.0)


def test_results_are_kept_up_to_their_bound_the_least_recently_used_leaving() -> None:
    cache = ResultCache(size=2)
    result = CapabilityResult(request_id="r", capability="c.x", status="completed", output={})
    cache.put(("a", "1"), result)
    cache.put(("a", "2"), result)
    assert cache.get(("a", "1")) == result  # used: kept
    cache.put(("a", "3"), result)
    assert cache.get(("a", "2")) is None and cache.get(("a", "1")) == result


def test_a_pending_prompt_is_answerable_once_and_is_gone_once_removed() -> None:
    book = PendingBook(limit=1)
    view = CapabilityPromptView(
        prompt_id="p", app_scope="a", app_title="A", instance_id="i", capability="c.x",
        purpose="why", rememberable=True, expires_at=1.0,
    )  # fmt: skip
    entry = book.add("p", view)
    assert book.full("a") and book.prompts() == (view,) and book.runs() == ()
    assert book.waiting("p") is entry
    entry.answered.set()
    assert book.waiting("p") is None and book.prompts() == ()
    book.remove("p")
    assert not book.full("a") and book.waiting("p") is None


def view_of(prompt_id: str, scope: str, capability: str = "c.x") -> CapabilityPromptView:
    return CapabilityPromptView(
        prompt_id=prompt_id, app_scope=scope, app_title=scope, instance_id="i",
        capability=capability, purpose="why", rememberable=True, expires_at=1.0,
    )  # fmt: skip


def test_one_apps_waiting_prompts_are_bounded_without_filling_another_apps_room() -> None:
    book = PendingBook(limit=10, per_app=2)
    first = view_of("a1", "a")
    book.add("a1", first)
    book.add("a2", view_of("a2", "a"))
    assert book.full("a") and not book.full("b")
    book.add("b1", view_of("b1", "b"))
    book.add("a3", view_of("a3", "a", "c.y"))  # past its own bound: the gate refuses first
    assert [e.view.app_scope + e.view.capability for e in book.siblings(first)] == ["ac.x"]
    book.remove("a2")
    assert book.siblings(first) == []
    everyone = PendingBook(limit=2, per_app=2)
    everyone.add("x", view_of("x", "x"))
    everyone.add("y", view_of("y", "y"))
    assert everyone.full("z")  # the safety bound over all apps


def test_after_a_no_the_app_is_quiet_for_that_capability_until_its_time_or_an_allow() -> None:
    quiet = PromptQuiet(30.0)
    quiet.hush("a", "c.x", 100.0)
    assert quiet.quiet("a", "c.x", 129.9)
    assert not quiet.quiet("a", "c.y", 110.0) and not quiet.quiet("b", "c.x", 110.0)
    assert not quiet.quiet("a", "c.x", 130.0)
    quiet.hush("a", "c.x", 200.0)
    quiet.lift("a", "c.x")
    assert not quiet.quiet("a", "c.x", 201.0)
    never = PromptQuiet(0.0)
    never.hush("a", "c.x", 300.0)
    assert not never.quiet("a", "c.x", 300.0)
