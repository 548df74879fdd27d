"""npm packages pinned by version and by the registry's `dist.integrity` of their tarball: the
MCP server `make run`'s catalog packs (`lineup.ops.catalog`), which the tests also fetch
(`lineup.tests.support.npm`) and a test's MiniApp reads inside its sandbox, so the pin is
written once, here. Data only, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["BASIC_VANILLAJS", "NpmPin"]


@dataclass(frozen=True)
class NpmPin:
    name: str  # `@modelcontextprotocol/server-basic-vanillajs`
    version: str
    integrity: str  # `npm view NAME@VERSION dist.integrity`

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    def spec_args(self) -> tuple[str, ...]:
        """`lineup app pack-mcp`'s arguments that fetch exactly this package."""
        return ("--npm", self.spec, "--integrity", self.integrity)


# The MCP Apps example the specification ships (one tool, `get-time`, and its UI resource).
BASIC_VANILLAJS: Final = NpmPin(
    "@modelcontextprotocol/server-basic-vanillajs",
    "2.0.3",
    "sha512-SGqoYRPkZ83b9VTJGdGzDHqL7+OCzTcEunkA2h7lJr5xpWxqMO43OIBkYFgYLfptxLMbB6K6cVX7dISFXv5xDA==",
)
