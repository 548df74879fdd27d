"""What the App Registry's Surface shows, as pure functions of the runtime's answers.

`rows` turns the registry's listing into the table's rows, each with the actions that apply to
it (and only those: the Surface draws a button per action it is given); `available` turns the
local catalog's entries into the "Available" list, each installable or not with the reason in
words. `status_of` turns a
capability's result into the one-line status the user reads: the operation and the app it was
on, or why nothing happened, by code. Nothing here does I/O, and no line ever holds a path, a
file name or anything the user typed: only app scopes, versions and codes the runtime chose
(an "Available" entry keeps the catalog's file name, the runtime's own, to name it back).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from lineup.sdk import protocol as p

__all__ = [
    "ACTIONS",
    "MAX_ROWS",
    "Action",
    "actions_for",
    "available",
    "listing_failed",
    "rows",
    "status_of",
]

Action = Literal["enable", "disable", "rollback", "remove", "set_default"]
ACTIONS: Final[tuple[Action, ...]] = ("enable", "disable", "rollback", "remove", "set_default")
MAX_ROWS: Final = 100  # rows the Surface shows: its whole state stays far below 64 KiB
# Apps the runtime never lets go: the chat (the recovery app) and the core apps (this one).
_PROTECTED_KINDS: Final = frozenset({"system", "core"})

# What a refusal or failure means to the user, by the runtime's code.
_REASONS: Final[dict[str, str]] = {
    "signature_invalid": "the bundle's signature does not verify",
    "unknown_key": "the bundle is signed by a key this runtime does not trust",
    "size_mismatch": "the bundle's size is not the one it was signed with",
    "digest_mismatch": "the bundle's content is not the one it was signed with",
    "bundle_malformed": "the file is not an app bundle",
    "host_version_unsupported": "the app needs a newer LineUp",
    "app_version_mismatch": "that version cannot replace the installed one, or cannot run here",
    "revoked": "that version has been revoked",
    "no_predecessor": "there is no verified earlier version to go back to",
    "app_protected": "this app cannot be changed that way",
    "app_unavailable": "the app's installed files do not verify",
    "app_not_installed": "the app is not installed",
    "app_disabled": "the app is disabled",
    "artifact_too_large": "the file is too large",
    "artifact_not_found": "the file is gone",
    "quota_exceeded": "this app has no room left for another file",
    "foreground_required": "the App Registry must be in front",
    "rate_limited": "too many requests; try again in a minute",
    "capability_denied": "the App Registry may not ask for that",
    "policy_denied": "this runtime's policy does not allow it",
    "unsupported_on_host": "this host cannot do that",
    "operation_expired": "the question was not answered in time",
    "provider_failed": "the runtime could not do it",
    "deadline_exceeded": "the runtime did not answer in time",
    "catalog_entry_not_found": "the catalog no longer holds that bundle",
}
# What an entry of the local catalog that cannot be installed now means, where it differs.
_CATALOG_REASONS: Final[dict[str, str]] = {
    "app_version_mismatch": "installed already (this version or a newer one)",
    "app_protected": "an app of this LineUp has that name",
    "bundle_malformed": "not an app bundle",
}
_DONE: Final[dict[str, str]] = {
    "install": "Installed",
    "update": "Updated",
    "enable": "Enabled",
    "disable": "Disabled",
    "rollback": "Rolled back",
    "revoke": "Revoked",
    "remove": "Removed",
    "set_default": "Made the default app:",
}
_WHAT: Final[dict[str, str]] = {
    "install": "Install",
    "file": "Choosing a file",
    "enable": "Enable",
    "disable": "Disable",
    "rollback": "Roll back",
    "remove": "Remove",
    "set_default": "Make default",
}


def actions_for(app: p.RegistryAppInfo, default_app: str) -> tuple[Action, ...]:
    """The actions that apply to `app` as it stands, in the order the Surface shows them.
    The chat and core apps are never disabled or removed; only an installed app is rolled
    back (to its verified predecessor) or removed; only an enabled, runnable app that is not
    the default already can be made the default."""
    protected = app.kind in _PROTECTED_KINDS or app.source == "system"
    installed = app.source == "installed"
    found: list[Action] = []
    if not app.enabled and not protected:
        found.append("enable")
    if app.enabled and not protected:
        found.append("disable")
    if installed and app.predecessor is not None:
        found.append("rollback")
    if installed and app.removable and not protected:
        found.append("remove")
    if app.enabled and app.state == "active" and app.app_scope != default_app:
        found.append("set_default")
    return tuple(found)


def rows(listing: p.RegistryListReply) -> list[dict[str, Any]]:
    """The table's rows (JSON), in the registry's order, at most `MAX_ROWS`."""
    out: list[dict[str, Any]] = []
    for app in listing.apps[:MAX_ROWS]:
        operation = app.operation
        out.append(
            {
                "app_scope": app.app_scope,
                "title": app.title,
                "version": app.version,
                "kind": app.kind,
                "source": app.source,
                "enabled": app.enabled,
                "state": app.state,
                "predecessor": app.predecessor,
                "default": app.app_scope == listing.default_app,
                "operation": None
                if operation is None
                else {
                    "kind": operation.kind,
                    "state": operation.state,
                    "version": operation.version,
                    "code": operation.code,
                },
                "actions": list(actions_for(app, listing.default_app)),
            }
        )
    return out


def available(listing: p.RegistryListReply) -> list[dict[str, Any]]:
    """The "Available" list (JSON): the local catalog's bundles, in its order, at most
    `MAX_ROWS`, each `installable` (its `code` None) or with the reason in words."""
    out: list[dict[str, Any]] = []
    for entry in listing.catalog[:MAX_ROWS]:
        code = entry.code
        out.append(
            {
                "file": entry.file,
                "app_scope": entry.app_scope or "",
                "version": entry.version or "",
                "key_id": entry.key_id or "",
                "installable": code is None,
                "code": code or "",
                "reason": "" if code is None else _CATALOG_REASONS.get(code, _reason(code)),
            }
        )
    return out


def _reason(code: str | None) -> str:
    if code is None:
        return "it did not happen"
    return _REASONS.get(code, "it did not happen")


def status_of(
    what: str, result: p.CapabilityResult, app_scope: str | None = None
) -> dict[str, Any]:
    """The status line for one capability's result. `what` names the step (`file` for the
    file picker, else the operation), `app_scope` the app it was on, if the user chose one."""
    label = _WHAT.get(what, what)
    target = f" {app_scope}" if app_scope else ""
    if result.status == "completed":
        operation = (result.output or {}).get("operation")
        info = _operation(operation)
        if info is not None and info.state == "failed":
            return _line("error", f"{label}{target} failed: {_reason(info.code)}.", info.code)
        if info is not None:
            version = f" {info.version}" if info.version and info.kind != "set_default" else ""
            done = _DONE.get(info.kind, "Done:")
            return _line("ok", f"{done} {info.app_scope}{version}.", None)
        return _line("ok", f"{label}{target}: done.", None)
    if result.status == "cancelled_by_user":
        return _line("info", f"{label}{target}: cancelled.", result.code)
    if result.status == "permission_denied":
        if result.code == "capability_denied":
            return _line("error", f"{label}{target}: {_reason(result.code)}.", result.code)
        return _line("info", f"{label}{target}: you did not allow it.", result.code)
    if result.status == "expired":
        return _line("info", f"{label}{target}: the question expired unanswered.", result.code)
    return _line("error", f"{label}{target} failed: {_reason(result.code)}.", result.code)


def listing_failed(code: str) -> dict[str, Any]:
    """The status line when the registry could not be read."""
    return _line("error", f"Could not read the list of apps: {_reason(code)}.", code)


def _operation(raw: object) -> p.AppOperationInfo | None:
    if not isinstance(raw, dict):
        return None
    try:
        return p.AppOperationInfo.model_validate(raw)
    except ValueError:
        return None


def _line(tone: Literal["ok", "info", "error"], text: str, code: str | None) -> dict[str, Any]:
    # Every key, never null: the Surface's state is merged (RFC 7396), where a null removes a
    # key and a key left out keeps the previous line's.
    return {"tone": tone, "text": text, "code": code or ""}
