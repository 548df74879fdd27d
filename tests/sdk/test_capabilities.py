"""`AppContext.capabilities` (sdk/_services.py) against the testkit's fake gateway (sdk/testkit/):
the request carries the purpose, the input and the process's own instance; a fresh request id
each time unless one is given, and a repeat of one gets its first result; the fake refuses what
the app does not declare, an input the catalog's model refuses, and answers what a test set."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lineup.sdk import AppContext, AppInfo, MiniApp, capabilities, testkit
from lineup.sdk.testkit import DEFAULT_INSTANCE


class Notifier(MiniApp):
    app_info = AppInfo(
        app_scope="notifier",
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=("notification.show", "file.open"),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app


async def test_a_request_names_the_instance_and_gets_the_result_the_test_set() -> None:
    app = Notifier()
    runtime = await testkit.start(app)
    runtime.capabilities.set_result("file.open", "cancelled_by_user", "cancelled_by_user")
    shown = await app.app.capabilities.request(
        "notification.show", "Tell you the task finished", {"title": "Done"}
    )
    assert (shown.status, shown.code, shown.output) == ("completed", None, {})
    picked = await app.app.capabilities.request("file.open", "Open a board", {})
    assert (picked.status, picked.code, picked.output) == (
        "cancelled_by_user", "cancelled_by_user", None,
    )  # fmt: skip
    first, second = runtime.capabilities.requests
    assert (first.instance_id, first.purpose, first.input) == (
        DEFAULT_INSTANCE, "Tell you the task finished", {"title": "Done"},
    )  # fmt: skip
    assert first.request_id != second.request_id  # a fresh id per request
    assert runtime.capabilities.last("file.open") == second


async def test_a_repeated_request_id_gets_its_first_result() -> None:
    app = Notifier()
    runtime = await testkit.start(app)
    first = await app.app.capabilities.request(
        "notification.show", "Ping", {"title": "A"}, request_id="r-1"
    )
    runtime.capabilities.set_result("notification.show", "policy_denied", "policy_denied")
    again = await app.app.capabilities.request(
        "notification.show", "Ping", {"title": "A"}, request_id="r-1"
    )
    assert again == first
    other = await app.app.capabilities.request("notification.show", "Ping", {"title": "A"})
    assert (other.status, other.code) == ("policy_denied", "policy_denied")


async def test_the_fake_refuses_the_undeclared_an_invalid_input_and_another_instance() -> None:
    app = Notifier()
    await testkit.start(app)
    ask = app.app.capabilities.request
    undeclared = await ask("artifact.save", "Export", {"artifact_id": "art_1"})
    assert (undeclared.status, undeclared.code) == ("permission_denied", "capability_denied")
    invalid = await ask("notification.show", "Ping", {"title": ""})
    assert (invalid.status, invalid.code) == ("failed", "invalid_arguments")
    elsewhere = await ask("notification.show", "Ping", {"title": "A"}, instance_id="other")
    assert (elsewhere.status, elsewhere.code) == ("failed", "app_instance_not_found")


# ---------------------------------------------------------------------------------- app.install


@pytest.mark.parametrize(
    "raw",
    [
        {"artifact_id": "art-1"},
        {"catalog_file": "draw-and-guess-1.0.0.lineup"},
    ],
)
def test_app_install_takes_an_artifact_or_a_plain_catalog_file_name(raw: dict[str, str]) -> None:
    parsed = capabilities.parse_input("app.install", raw)
    assert parsed.model_dump(exclude_none=True) == raw


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"artifact_id": "art-1", "catalog_file": "x.lineup"},
        {"catalog_file": "../x.lineup"},
        {"catalog_file": "/etc/x.lineup"},
        {"catalog_file": "sub/x.lineup"},
        {"catalog_file": "..lineup"},
        {"catalog_file": "x.pub"},
        {"catalog_file": "x" * 200 + ".lineup"},
    ],
)
def test_app_install_refuses_anything_but_exactly_one_plain_name(raw: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        capabilities.parse_input("app.install", raw)
