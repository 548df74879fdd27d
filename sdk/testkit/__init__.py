"""Unit-test a MiniApp without the runtime: an in-memory fake of the runtime side of its channel.

    runtime = await testkit.start(app)             # app.start(AppContext on the fake)
    record = await testkit.call_tool(app, "task-dashboard.open", {"task_id": "t1", ...})
    assert record.status == "completed" and record.result == {...}
    assert runtime.ui.last == {...}                # the view the app rendered last

`FakeRuntime` answers the SDK's requests the way the router and focus do (same receipts, same
refusal codes for the cases it models), records every render, delivery acknowledgement, sent
message, lifecycle request and tool outcome, keeps each instance's session data with the store's
compare-and-set revisions, and refuses a second terminal result for a call with
`call_already_final`, as the runtime does. `refuse(...)` makes the next request of a type fail
with a code, to test an app's failure paths. Nothing here does I/O or needs a trio run loop
beyond the awaits of the app's own code.

The runtime tells a running app of session data writes through its event queue, which the app's
host drains between hooks; here `FakeRuntime.settle()` does that. `start` and `call_tool` settle
once the app's code returned; a test that drives a hook directly settles after it.

One fake per service of `AppContext`, each in a module of its own (`_inbox`, `_ui`,
`_lifecycle`, `_navigation`, `_session_data`, `_interactions`, `_surfaces`, `_registry`,
`_artifacts`, `_capabilities`); `_runtime` holds `FakeRuntime`, which hands each request to
its service's fake, and `start` / `call_tool`. This module's names are the testkit's whole
public API.
`tests/sdk/behaviour/` runs one suite of the SDK's behaviour against this fake and against a
real runtime, so the two cannot drift apart unseen.
"""

from __future__ import annotations

from ._artifacts import FakeArtifacts
from ._capabilities import FakeCapabilities
from ._inbox import FakeConversation, FakeInbox
from ._interactions import FakeInteractions
from ._lifecycle import FakeLifecycle
from ._navigation import FakeNavigation
from ._registry import FakeRegistry
from ._runtime import DEFAULT_INSTANCE, CallRecord, FakeRuntime, call_tool, start
from ._session_data import FakeSessionData
from ._surfaces import FakeSurface, FakeSurfaces
from ._ui import FakeUi

__all__ = [
    "DEFAULT_INSTANCE",
    "CallRecord",
    "FakeArtifacts",
    "FakeCapabilities",
    "FakeConversation",
    "FakeInbox",
    "FakeInteractions",
    "FakeLifecycle",
    "FakeNavigation",
    "FakeRegistry",
    "FakeRuntime",
    "FakeSessionData",
    "FakeSurface",
    "FakeSurfaces",
    "FakeUi",
    "call_tool",
    "start",
]
