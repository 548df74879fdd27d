"""What the App Registry's Surface shows, as pure functions of the runtime's answers.

`rows` turns the registry's listing into the table's rows, each with the actions that apply to
it (and only those: the Surface draws a button per action it is given); `available` turns the
local catalog's entries into the "Available" list, each installable or not with the reason in
words. `status_of` turns a capability's result into the one-line status the user reads: the
operation and the app it was on, or why nothing happened.

Words, not codes (issue 28): an app is named by its title everywhere (a catalog bundle by the
title its verified manifest gives, else the installed app's), what it is and how it stands are
said in words (`Comes with LineUp`, `Ready`), and a refusal is the sentence the Shell says for
its code (`hostbridge/web/js/core/words.js`; `_SENTENCES` is the part of it the registry can
meet, and tests/miniapps/app_registry/test_words.py fails on one that differs). The code itself,
the app's id and its signer's key go to a details line, for the curious. An install that
finished is a success: its bundle in "Available" reads "Installed", never a refusal code.

Nothing here does I/O, and no line ever holds a path, a file name or anything the user typed:
only app titles, scopes, versions, key ids and codes the runtime chose (an "Available" entry
keeps the catalog's file name, the runtime's own, to name it back).
"""

from __future__ import annotations

from collections.abc import Mapping
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
    "sentence_for",
    "status_of",
]

Action = Literal["enable", "disable", "rollback", "remove", "set_default"]
ACTIONS: Final[tuple[Action, ...]] = ("enable", "disable", "rollback", "remove", "set_default")
MAX_ROWS: Final = 100  # rows the Surface shows: its whole state stays far below 64 KiB
# Apps the runtime never lets go: the chat (the recovery app) and the core apps (this one).
_PROTECTED_KINDS: Final = frozenset({"system", "core"})
Tone = Literal["ok", "info", "off", "error"]

# What a refusal or failure means to the user, by the runtime's code: the Shell's sentences.
_SENTENCES: Final[Mapping[str, str]] = {
    "actor_restarted": "A part of LineUp restarted while this was on its way. Try again.",
    "deadline_exceeded": "LineUp did not answer in time. Try again.",
    "rate_limited": "That was asked too often. Wait a moment, then try again.",
    "quota_exceeded": "This app has reached its limit (too many open, or no room left).",
    "internal_error": "Something went wrong inside LineUp.",
    "store_unavailable": "LineUp could not save or read its data.",
    "shutting_down": "LineUp is stopping.",
    "app_disabled": "That app is turned off. Turn it on in the App Registry.",
    "lifecycle_denied": "The app cannot do that now (or too many of it are open).",
    "capability_denied": "The app did not declare that it needs this, so it may not ask.",
    "cancelled_by_user": "You cancelled it.",
    "permission_denied": "That was not allowed.",
    "app_not_installed": "That app is not installed.",
    "app_version_mismatch": "This version, or a newer one, is installed already.",
    "invalid_arguments": "That request was not complete or not valid.",
    "foreground_required": "The app must be in front for that.",
    "operation_expired": "Nobody answered in time.",
    "artifact_not_found": "That file is gone, or belongs to another app.",
    "artifact_invalid": "That file's type or name is not allowed.",
    "artifact_too_large": "That file is too large.",
    "policy_denied": "Your settings do not allow this.",
    "unsupported_on_host": "This computer cannot do that (or it is switched off).",
    "provider_failed": "This computer tried and failed.",
    "bundle_malformed": "That file is not an app LineUp can install.",
    "signature_invalid": "The app's signature does not check out, so it was not installed.",
    "unknown_key": "The app is signed by a publisher this LineUp does not trust.",
    "size_mismatch": "The app's file is not the one its publisher signed.",
    "digest_mismatch": "The app's content is not the one its publisher signed.",
    "host_version_unsupported": "The app needs a newer LineUp.",
    "revoked": "That version of the app has been withdrawn by its publisher.",
    "url_not_allowed": "Apps can only be installed from a secure (https) address.",
    "download_failed": "The app could not be downloaded completely.",
    "no_predecessor": "There is no earlier version to go back to.",
    "app_protected": "This app is part of LineUp and cannot be changed that way.",
    "app_unavailable": "The app's installed files are damaged or withdrawn.",
    "catalog_entry_not_found": "That app is no longer in the catalog.",
    "expired": "Nobody answered in time.",
    "failed": "It did not work.",
}
GENERAL_SENTENCE: Final = "That could not be done."

# What an app is, by where it comes from (the manifest's kind and the registry's source).
_WHAT_IT_IS: Final[dict[str, str]] = {
    "system": "Part of LineUp",
    "core": "Built into LineUp",
    "bundled": "Comes with LineUp",
    "dev": "In development, from a folder",
    "installed": "Installed by you",
}
_DONE: Final[dict[str, str]] = {
    "install": "Installed",
    "update": "Updated",
    "enable": "Enabled",
    "disable": "Disabled",
    "rollback": "Rolled back",
    "revoke": "Withdrawn",
    "remove": "Removed",
    "set_default": "Made the default app:",
}
_DOING: Final[dict[str, str]] = {
    "install": "Installing",
    "update": "Updating",
    "enable": "Enabling",
    "disable": "Disabling",
    "rollback": "Rolling back",
    "revoke": "Withdrawing",
    "remove": "Removing",
    "set_default": "Making it the default",
}
_WHAT: Final[dict[str, str]] = {
    "install": "Install",
    "update": "Update",
    "file": "Choosing a file",
    "enable": "Enable",
    "disable": "Disable",
    "rollback": "Roll back",
    "revoke": "Withdraw",
    "remove": "Remove",
    "set_default": "Make default",
}


def sentence_for(code: str | None) -> str:
    """What `code` means to the user, as a sentence (the general one for a code not known)."""
    return _SENTENCES.get(code or "", GENERAL_SENTENCE)


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


def titles_of(listing: p.RegistryListReply) -> dict[str, str]:
    """Each listed app's title, by its scope."""
    return {app.app_scope: app.title for app in listing.apps if app.title}


def _what_it_is(app: p.RegistryAppInfo) -> str:
    if app.source == "system" or app.kind == "system":
        return _WHAT_IT_IS["system"]
    if app.kind == "core":
        return _WHAT_IT_IS["core"]
    return _WHAT_IT_IS.get(app.source, _WHAT_IT_IS["installed"])


def _standing(app: p.RegistryAppInfo) -> tuple[str, Tone]:
    if not app.enabled:
        return "Disabled", "off"
    if app.state == "unavailable":
        return "Cannot start: its installed files are damaged or withdrawn", "error"
    if app.state == "incompatible":
        return "Cannot run on this LineUp", "error"
    return "Ready", "ok"


def _last_change(operation: p.AppOperationInfo | None) -> dict[str, str]:
    """The latest operation on an app, in words: what was done (and to which version), what is
    under way, or what failed and why; its code only for the details line."""
    if operation is None:
        return {"text": "", "tone": "info", "code": ""}
    version = (
        f" {operation.version}" if operation.version and operation.kind != "set_default" else ""
    )
    if operation.state == "completed":
        done = _DONE.get(operation.kind, "Done")
        text = "Made the default app" if operation.kind == "set_default" else f"{done}{version}"
        return {"text": text, "tone": "ok", "code": ""}
    if operation.state == "failed":
        what = _WHAT.get(operation.kind, "It")
        text = f"{what}{version} failed. {sentence_for(operation.code)}"
        return {"text": text, "tone": "error", "code": operation.code or ""}
    return {
        "text": f"{_DOING.get(operation.kind, 'Working')}{version}…",
        "tone": "info",
        "code": "",
    }


def _details(scope: str, key_id: str | None, predecessor: str | None = None) -> str:
    parts = [f"App id {scope}"]
    if key_id:
        parts.append(f"signed by key {key_id}")
    if predecessor:
        parts.append(f"can roll back to {predecessor}")
    return " · ".join(parts)


def rows(listing: p.RegistryListReply) -> list[dict[str, Any]]:
    """The table's rows (JSON), in the registry's order, at most `MAX_ROWS`."""
    out: list[dict[str, Any]] = []
    for app in listing.apps[:MAX_ROWS]:
        operation = app.operation
        status, tone = _standing(app)
        out.append(
            {
                "app_scope": app.app_scope,
                "title": app.title or app.app_scope,
                "version": app.version,
                "kind": app.kind,
                "source": app.source,
                "what": _what_it_is(app),
                "enabled": app.enabled,
                "state": app.state,
                "status": status,
                "status_tone": tone,
                "predecessor": app.predecessor,
                "details": _details(app.app_scope, app.key_id, app.predecessor),
                "default": app.app_scope == listing.default_app,
                "operation": None
                if operation is None
                else {
                    "kind": operation.kind,
                    "state": operation.state,
                    "version": operation.version,
                    "code": operation.code,
                },
                "last": _last_change(operation),
                "actions": list(actions_for(app, listing.default_app)),
            }
        )
    return out


def available(listing: p.RegistryListReply) -> list[dict[str, Any]]:
    """The "Available" list (JSON): the local catalog's bundles, in its order, at most
    `MAX_ROWS`, each `installable` (its `code` "") or with how it stands in words: installed
    already (a success, not a refusal), or why it cannot be installed."""
    installed = {app.app_scope: app for app in listing.apps}
    titles = titles_of(listing)
    out: list[dict[str, Any]] = []
    for entry in listing.catalog[:MAX_ROWS]:
        scope, version, code = entry.app_scope or "", entry.version or "", entry.code
        reason, tone = _catalog_standing(code, installed.get(scope), version)
        title = entry.title or titles.get(scope) or scope
        out.append(
            {
                "file": entry.file,
                "app_scope": scope,
                "title": title or "A file that is not an app",
                "version": version,
                "key_id": entry.key_id or "",
                "installable": code is None,
                "code": code or "",
                "reason": reason,
                "tone": tone,
                "details": _details(scope, entry.key_id) if scope else "",
            }
        )
    return out


def _catalog_standing(
    code: str | None, app: p.RegistryAppInfo | None, version: str
) -> tuple[str, Tone]:
    if code is None:
        return "", "info"
    if code == "app_version_mismatch":
        if app is None or app.version == version:
            return "Installed", "ok"
        return f"Version {app.version} is installed", "info"
    if code == "app_protected":
        return "Part of LineUp already", "info"
    return sentence_for(code), "error"


def status_of(
    what: str,
    result: p.CapabilityResult,
    app_scope: str | None = None,
    titles: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The status line for one capability's result. `what` names the step (`file` for the
    file picker, else the operation), `app_scope` the app it was on, if the user chose one;
    `titles` names the apps (by scope) the line mentions."""
    named = titles or {}
    label = _WHAT.get(what, what)
    target = f" {named.get(app_scope, app_scope)}" if app_scope else ""
    if result.status == "completed":
        operation = (result.output or {}).get("operation")
        info = _operation(operation)
        if info is not None and info.state == "failed":
            return _line("error", f"{label}{target} failed. {sentence_for(info.code)}", info.code)
        if info is not None:
            version = f" {info.version}" if info.version and info.kind != "set_default" else ""
            done = _DONE.get(info.kind, "Done:")
            title = named.get(info.app_scope, info.app_scope)
            return _line("ok", f"{done} {title}{version}.", None)
        return _line("ok", f"{label}{target}: done.", None)
    if result.status == "cancelled_by_user":
        return _line("info", f"{label}{target}: cancelled.", result.code)
    if result.status == "permission_denied":
        if result.code == "capability_denied":
            return _line("error", f"{label}{target}: {sentence_for(result.code)}", result.code)
        return _line("info", f"{label}{target}: you did not allow it.", result.code)
    if result.status == "expired":
        return _line("info", f"{label}{target}: the question expired unanswered.", result.code)
    return _line("error", f"{label}{target} failed. {sentence_for(result.code)}", result.code)


def listing_failed(code: str) -> dict[str, Any]:
    """The status line when the registry could not be read."""
    return _line("error", f"Could not read the list of apps. {sentence_for(code)}", code)


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
