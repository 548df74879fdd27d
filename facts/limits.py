"""Bounds the store enforces that an app, the SDK's testkit or another actor must know. No I/O.

The wire's own bounds (a frame, a document's size and depth) are in `lineup.wire._limits`; those
the SDK's protocol states to authors (`MAX_VIEW_BYTES`, `MAX_ARTIFACT_BYTES`, …) are in
`lineup.sdk.protocol`.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_JSON_DEPTH", "MAX_SESSION_DATA_BYTES", "MAX_TOOL_ID", "REPLY_BODY_BUDGET"]

MAX_JSON_DEPTH: Final = 32  # nested objects and arrays; seed 004 §6.3 "解析深度配额"
MAX_SESSION_DATA_BYTES: Final = 256 * 1024  # one app sub-session's document, compact UTF-8
MAX_TOOL_ID: Final = 100  # characters of the id a call's tool is recorded by (its `tool`)
# Bodies per list reply (a history page, …), in bytes of stored JSON: comfortably below the
# 1 MiB frame limit, so a reply of many rows never fails to encode. The first row always fits.
REPLY_BODY_BUDGET: Final = 512 * 1024
