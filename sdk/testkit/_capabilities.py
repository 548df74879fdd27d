"""The capability gateway, in memory (`Capabilities`)."""

from __future__ import annotations

from typing import Any

from lineup.actors.kernel import ErrorCode

from .. import protocol as p
from ..capabilities import CATALOG, parse_input

__all__ = ["FakeCapabilities"]


class FakeCapabilities:
    """The capability gateway, in memory: every request is recorded (`requests`); one for a
    capability the app does not declare (once `start` read its `app_info`) is
    `permission_denied` (`capability_denied`), one whose input the catalog's model refuses is
    `failed` (`invalid_arguments`), an instance not the app's `failed`
    (`app_instance_not_found`); otherwise the result `set_result` gave the capability (default:
    `completed` with output `{}`). A repeated request id gets its first result, as the
    gateway answers a repeat."""

    def __init__(self) -> None:
        self.requests: list[p.CapabilityRequest] = []
        self.declared: frozenset[str] | None = None  # None: not known, nothing refused for it
        self._set: dict[str, tuple[str, str | None, dict[str, Any] | None]] = {}
        self._given: dict[str, p.CapabilityResult] = {}

    def set_result(
        self,
        capability: str,
        status: str = "completed",
        code: str | None = None,
        output: dict[str, Any] | None = None,
    ) -> None:
        """The result of the next requests for `capability` (the user's and host's answer)."""
        self._set[capability] = (status, code, output)

    def last(self, capability: str | None = None) -> p.CapabilityRequest | None:
        return next(
            (r for r in reversed(self.requests) if capability in (None, r.capability)), None
        )

    def _answer(self, msg: p.CapabilityRequest, instances: set[str]) -> p.CapabilityResult:
        self.requests.append(msg)
        given = self._given.get(msg.request_id)
        if given is not None:
            return given
        status, code, output = self._decide(msg, instances)
        result = p.CapabilityResult.model_validate(
            {
                "request_id": msg.request_id,
                "capability": msg.capability,
                "status": status,
                "code": code,
                "output": output if status == "completed" else None,
            }
        )
        self._given[msg.request_id] = result
        return result

    def _decide(
        self, msg: p.CapabilityRequest, instances: set[str]
    ) -> tuple[str, str | None, dict[str, Any] | None]:
        if self.declared is not None and msg.capability not in self.declared:
            return "permission_denied", ErrorCode.CAPABILITY_DENIED.value, None
        if msg.instance_id not in instances:
            return "failed", ErrorCode.APP_INSTANCE_NOT_FOUND.value, None
        if msg.capability not in CATALOG:
            return "unsupported_on_host", ErrorCode.UNSUPPORTED_ON_HOST.value, None
        try:
            parse_input(msg.capability, msg.input)
        except ValueError:  # pydantic's ValidationError is one
            return "failed", ErrorCode.INVALID_ARGUMENTS.value, None
        status, code, output = self._set.get(msg.capability, ("completed", None, {}))
        return status, code, output if output is not None else {}
