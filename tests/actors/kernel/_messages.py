"""Test-only messages for the kernel's bus tests.

Every tag is global (`REGISTRY`), so these carry a `kerneltest` marker that no real protocol
and no other test module uses. The prefixes are chosen against the ACL table:

- `router.sdk.*` may be sent by a MiniApp to the router;
- `router.inbound.*` by the transport, a trusted runtime peer (focus only tells the router);
- `focus.*` may be sent by the router to focus, never by a MiniApp to the router.
"""

from __future__ import annotations

from typing import Any, Literal

from lineup.actors.kernel import Message


class EchoRequest(Message):
    type: Literal["router.sdk.kerneltest_echo"] = "router.sdk.kerneltest_echo"
    text: str


class EchoReply(Message):
    type: Literal["router.sdk.kerneltest_echo.reply"] = "router.sdk.kerneltest_echo.reply"
    text: str


class TreeRequest(Message):
    """A request carrying any JSON object (nested as deep as the caller likes)."""

    type: Literal["router.sdk.kerneltest_tree"] = "router.sdk.kerneltest_tree"
    tree: dict[str, Any]


class BlobRequest(Message):
    """A request as large as the caller likes (to fill socket buffers)."""

    type: Literal["router.sdk.kerneltest_blob"] = "router.sdk.kerneltest_blob"
    data: str


class NoteEvent(Message):
    type: Literal["router.sdk.kerneltest_note"] = "router.sdk.kerneltest_note"
    n: int
    padding: str = ""


class FocusEchoRequest(Message):
    """Allowed router → focus; forbidden MiniApp → router."""

    type: Literal["focus.kerneltest.echo"] = "focus.kerneltest.echo"
    text: str


class PeerEchoRequest(Message):
    """Allowed transport → router (a trusted peer); forbidden MiniApp → router."""

    type: Literal["router.inbound.kerneltest_echo"] = "router.inbound.kerneltest_echo"
    text: str


class PeerNoteEvent(Message):
    type: Literal["router.inbound.kerneltest_note"] = "router.inbound.kerneltest_note"
    n: int
    padding: str = ""
