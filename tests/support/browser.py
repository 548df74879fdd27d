"""Steps the real-Chromium tests (tests/browser) share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the browser tests' own modules, imported by them (and pytest) at run time
    from lineup.tests.browser._fake_hostbridge import FakeHostbridge, ShellConnection
    from lineup.tests.browser.conftest import ShellPage

ShellFrame = dict[str, Any]  # a frame of the Shell protocol, as the fake hostbridge sends it


async def open_shell(
    page: ShellPage, hostbridge: FakeHostbridge, *snapshot: ShellFrame | list[ShellFrame]
) -> ShellConnection:
    """Load the Shell from the fake hostbridge (the token in the fragment); return its connection
    once it said shell.ready, which the fake answers with `snapshot`."""
    hostbridge.on_ready = list(snapshot)
    await page.run(lambda p: p.goto(hostbridge.shell_url()))
    connection = await hostbridge.next_connection()
    await connection.expect("shell.ready")
    return connection
