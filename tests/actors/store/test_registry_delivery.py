"""The store's side of app delivery: installs and updates with their predecessor, rollback,
states, revocations, removal, operations and their recovery, settings — each one transaction,
audited in it."""

from __future__ import annotations

from typing import Any

from lineup.actors.kernel import ErrorCode
from lineup.actors.store.messages import (
    AppEnabledSetReply,
    AppEnabledSetRequest,
    AppInstallRecordReply,
    AppInstallRecordRequest,
    AppOperationKind,
    AppOperationListReply,
    AppOperationListRequest,
    AppOperationPutReply,
    AppOperationPutRequest,
    AppOperationRecoverReply,
    AppOperationRecoverRequest,
    AppRegistryGetReply,
    AppRegistryGetRequest,
    AppRegistryPutReply,
    AppRegistryPutRequest,
    AppRemoveReply,
    AppRemoveRequest,
    AppRollbackReply,
    AppRollbackRequest,
    AppStateSetReply,
    AppStateSetRequest,
    AuditQueryReply,
    AuditQueryRequest,
    RevocationAddReply,
    RevocationAddRequest,
    RevocationListReply,
    RevocationListRequest,
    SessionDataReplaceReply,
    SessionDataReplaceRequest,
    SettingGetReply,
    SettingGetRequest,
    SettingPutReply,
    SettingPutRequest,
)
from lineup.tests.actors.store._harness import StoreHarness, independent_rows, refusal

SHA1 = "1" * 64
SHA2 = "2" * 64


def install(version: str, sha: str, operation_id: str | None = None) -> AppInstallRecordRequest:
    manifest: dict[str, Any] = {"app_scope": "notes", "version": version}
    return AppInstallRecordRequest(
        app_scope="notes",
        version=version,
        kind="installed",
        manifest=manifest,
        bundle_sha256=sha,
        key_id="ed25519:0123456789abcdef",
        operation_id=operation_id,
    )


async def operation(
    store: StoreHarness, operation_id: str, kind: AppOperationKind = "install"
) -> None:
    await store.ask(
        AppOperationPutRequest(
            operation_id=operation_id, app_scope="notes", kind=kind, state="running"
        ),
        AppOperationPutReply,
    )


async def state_of(store: StoreHarness, operation_id: str) -> tuple[str, str | None]:
    reply = await store.ask(
        AppOperationListRequest(operation_id=operation_id), AppOperationListReply
    )
    (op,) = reply.operations
    return op.state, op.code


async def test_an_update_keeps_the_active_version_as_the_predecessor_and_rollback_swaps(
    store: StoreHarness,
) -> None:
    first = await store.ask(install("1.0", SHA1), AppInstallRecordReply)
    assert first.created and first.app.source == "installed" and first.app.enabled
    await store.ask(AppEnabledSetRequest(app_scope="notes", enabled=False), AppEnabledSetReply)
    updated = await store.ask(install("1.1", SHA2), AppInstallRecordReply)
    assert (updated.app.version, updated.app.previous_version) == ("1.1", "1.0")
    assert not updated.app.enabled  # an update keeps the flag
    record = (await store.ask(AppRegistryGetRequest(app_scope="notes"), AppRegistryGetReply)).record
    assert record is not None
    assert record.previous_bundle_sha256 == SHA1
    assert record.previous_manifest == {"app_scope": "notes", "version": "1.0"}

    back = await store.ask(
        AppRollbackRequest(app_scope="notes", from_version="1.1"), AppRollbackReply
    )
    assert (back.app.version, back.app.bundle_sha256, back.app.previous_version) == (
        "1.0",
        SHA1,
        "1.1",
    )
    # A rollback that names a version no longer active changes nothing.
    assert await refusal(store, AppRollbackRequest(app_scope="notes", from_version="1.1")) == (
        ErrorCode.STALE_REVISION
    )


async def test_an_equal_or_older_version_is_refused_and_a_repeat_changes_nothing(
    store: StoreHarness,
) -> None:
    await store.ask(install("2.0", SHA2), AppInstallRecordReply)
    again = await store.ask(install("2.0", SHA2), AppInstallRecordReply)
    assert not again.changed
    assert await refusal(store, install("1.9", SHA1)) == ErrorCode.APP_VERSION_MISMATCH
    assert await refusal(store, install("2.0", SHA1)) == ErrorCode.APP_VERSION_MISMATCH


async def test_a_bundled_app_is_never_replaced_rolled_back_or_removed(
    store: StoreHarness,
) -> None:
    await store.ask(
        AppRegistryPutRequest(
            app_scope="notes", version="1", kind="bundled-reference", manifest={}
        ),
        AppRegistryPutReply,
    )
    assert await refusal(store, install("9.0", SHA1)) == ErrorCode.APP_PROTECTED
    assert await refusal(store, AppRemoveRequest(app_scope="notes")) == ErrorCode.APP_PROTECTED
    assert await refusal(store, AppRollbackRequest(app_scope="notes", from_version="1")) == (
        ErrorCode.APP_PROTECTED
    )


def dev_put() -> AppRegistryPutRequest:
    return AppRegistryPutRequest(
        app_scope="notes", version="0.0.1", kind="installed", manifest={}, source="dev"
    )


async def test_an_install_that_replaces_a_leftover_dev_row_is_a_fresh_install(
    store: StoreHarness,
) -> None:
    await store.ask(dev_put(), AppRegistryPutReply)
    await store.ask(AppEnabledSetRequest(app_scope="notes", enabled=False), AppEnabledSetReply)
    for scope in ("notes", "other"):
        await store.ask(
            SessionDataReplaceRequest(
                app_scope=scope, app_session_id="s1", data={"a": 1}, expected_revision=0
            ),
            SessionDataReplaceReply,
        )
    await operation(store, "op-1")
    request = install("1.0", SHA1, "op-1").model_copy(update={"replaces": "dev"})
    reply = await store.ask(request, AppInstallRecordReply)
    assert (reply.created, reply.changed, reply.replaced) == (True, True, "dev")
    app = reply.app
    assert (app.source, app.version, app.enabled, app.state) == ("installed", "1.0", True, "active")
    assert (app.previous_version, app.bundle_sha256) == (None, SHA1)
    # The dev code's session data went with its row; another app's stays.
    assert independent_rows(store.db_path, "SELECT app_scope FROM session_data") == [("other",)]
    assert await state_of(store, "op-1") == ("completed", None)
    rows = independent_rows(
        store.db_path, "SELECT event, subject_id FROM audit WHERE peer = 'notes' ORDER BY id"
    )
    assert ("app.leftover_replaced", "op-1") in rows and ("app.installed", "op-1") in rows
    # Installed now: a repeat is a retry, and `replaces` no longer matters.
    again = await store.ask(request, AppInstallRecordReply)
    assert (again.changed, again.replaced) == (False, None)


async def test_an_install_over_a_dev_row_it_does_not_name_or_a_bundled_row_is_protected(
    store: StoreHarness,
) -> None:
    await store.ask(dev_put(), AppRegistryPutReply)
    # A dev app of the running tree: focus does not say `replaces`.
    assert await refusal(store, install("1.0", SHA1)) == ErrorCode.APP_PROTECTED
    bundled = AppRegistryPutRequest(
        app_scope="notes", version="1", kind="bundled-reference", manifest={}
    )
    await store.ask(bundled, AppRegistryPutReply)
    leftover = install("1.0", SHA1).model_copy(update={"replaces": "dev"})
    assert await refusal(store, leftover) == ErrorCode.APP_PROTECTED  # a bundled app's, never
    record = (await store.ask(AppRegistryGetRequest(app_scope="notes"), AppRegistryGetReply)).record
    assert record is not None and record.app.source == "bundled"


async def test_an_installed_app_is_never_overwritten_by_a_bundled_put(store: StoreHarness) -> None:
    await store.ask(install("1.0", SHA1), AppInstallRecordReply)
    put = AppRegistryPutRequest(app_scope="notes", version="1", kind="bundled", manifest={})
    assert await refusal(store, put) == ErrorCode.APP_PROTECTED


async def test_without_a_predecessor_a_rollback_is_refused(store: StoreHarness) -> None:
    await store.ask(install("1.0", SHA1), AppInstallRecordReply)
    assert await refusal(store, AppRollbackRequest(app_scope="notes", from_version="1.0")) == (
        ErrorCode.NO_PREDECESSOR
    )


async def test_the_change_completes_its_operation_in_the_same_transaction(
    store: StoreHarness,
) -> None:
    await operation(store, "op-1")
    await store.ask(install("1.0", SHA1, "op-1"), AppInstallRecordReply)
    assert await state_of(store, "op-1") == ("completed", None)
    rows = independent_rows(
        store.db_path, "SELECT event, subject_id FROM audit WHERE peer = 'notes' ORDER BY id"
    )
    assert ("app.install.running", "op-1") in rows
    assert ("app.installed", "op-1") in rows
    assert ("app.install.completed", "op-1") in rows


async def test_an_install_whose_operation_already_failed_writes_no_row(
    store: StoreHarness,
) -> None:
    """Focus heard no answer in time and ended the operation failed: the request, arriving
    late, must not install what the journal says was not."""
    await operation(store, "op-late")
    await store.ask(
        AppOperationPutRequest(
            operation_id="op-late",
            app_scope="notes",
            kind="install",
            state="failed",
            code=ErrorCode.DEADLINE_EXCEEDED.value,
        ),
        AppOperationPutReply,
    )
    assert await refusal(store, install("1.0", SHA1, "op-late")) == ErrorCode.DEADLINE_EXCEEDED
    record = await store.ask(AppRegistryGetRequest(app_scope="notes"), AppRegistryGetReply)
    assert record.record is None
    assert await state_of(store, "op-late") == ("failed", ErrorCode.DEADLINE_EXCEEDED.value)


async def test_a_final_operation_is_never_rewritten(store: StoreHarness) -> None:
    await operation(store, "op-1")
    failed = AppOperationPutRequest(
        operation_id="op-1", app_scope="notes", kind="install", state="failed", code="revoked"
    )
    assert (await store.ask(failed, AppOperationPutReply)).changed
    later = AppOperationPutRequest(
        operation_id="op-1", app_scope="notes", kind="install", state="completed"
    )
    reply = await store.ask(later, AppOperationPutReply)
    assert not reply.changed and (reply.operation.state, reply.operation.code) == (
        "failed",
        "revoked",
    )
    back = AppOperationPutRequest(
        operation_id="op-1", app_scope="notes", kind="install", state="requested"
    )
    assert not (await store.ask(back, AppOperationPutReply)).changed


async def test_recovery_fails_unfinished_operations_unless_their_result_is_in_the_registry(
    store: StoreHarness,
) -> None:
    await store.ask(install("1.0", SHA1), AppInstallRecordReply)
    # A disable whose row was written, but whose focus died before it said so.
    await operation(store, "op-disable", "disable")
    await store.ask(AppEnabledSetRequest(app_scope="notes", enabled=False), AppEnabledSetReply)
    # An update that never reached the registry.
    await store.ask(
        AppOperationPutRequest(
            operation_id="op-update",
            app_scope="notes",
            kind="update",
            state="running",
            version="1.1",
        ),
        AppOperationPutReply,
    )
    reply = await store.ask(AppOperationRecoverRequest(), AppOperationRecoverReply)
    assert reply.completed == ("op-disable",)
    assert reply.failed == ("op-update",)
    assert await state_of(store, "op-update") == ("failed", "actor_restarted")
    assert await state_of(store, "op-disable") == ("completed", None)
    again = await store.ask(AppOperationRecoverRequest(), AppOperationRecoverReply)
    assert again.completed == again.failed == ()


async def test_removal_deletes_the_row_grants_and_session_data_of_the_scope_only(
    store: StoreHarness,
) -> None:
    await store.ask(install("1.0", SHA1), AppInstallRecordReply)
    for scope in ("notes", "other"):
        await store.ask(
            SessionDataReplaceRequest(
                app_scope=scope, app_session_id="s1", data={"a": 1}, expected_revision=0
            ),
            SessionDataReplaceReply,
        )
    removed = await store.ask(AppRemoveRequest(app_scope="notes"), AppRemoveReply)
    assert (removed.removed, removed.session_documents) == (True, 1)
    assert (
        await store.ask(AppRegistryGetRequest(app_scope="notes"), AppRegistryGetReply)
    ).record is None
    assert independent_rows(store.db_path, "SELECT app_scope FROM session_data") == [("other",)]
    again = await store.ask(AppRemoveRequest(app_scope="notes"), AppRemoveReply)
    assert not again.removed


async def test_revocations_are_kept_once_and_listed(store: StoreHarness) -> None:
    await store.ask(install("1.0", SHA1), AppInstallRecordReply)
    first = await store.ask(
        RevocationAddRequest(app_scope="notes", version="1.0"), RevocationAddReply
    )
    second = await store.ask(
        RevocationAddRequest(app_scope="notes", version="1.0"), RevocationAddReply
    )
    assert first.created and not second.created
    listed = await store.ask(RevocationListRequest(), RevocationListReply)
    assert listed.revoked == (("notes", "1.0"),)
    assert independent_rows(store.db_path, "SELECT revoked FROM registry") == [(1,)]


async def test_state_changes_are_audited_with_their_code(store: StoreHarness) -> None:
    await store.ask(install("1.0", SHA1), AppInstallRecordReply)
    changed = await store.ask(
        AppStateSetRequest(app_scope="notes", state="unavailable", code="app_unavailable"),
        AppStateSetReply,
    )
    assert changed.changed and changed.app.state == "unavailable"
    audit = await store.ask(AuditQueryRequest(event_prefix="app.state."), AuditQueryReply)
    assert [(r.event, r.code) for r in audit.records] == [
        ("app.state.unavailable", "app_unavailable")
    ]
    assert await refusal(store, AppStateSetRequest(app_scope="nope", state="active")) == (
        ErrorCode.APP_NOT_INSTALLED
    )


async def test_a_setting_is_none_until_put_and_a_repeat_is_no_change(store: StoreHarness) -> None:
    assert (await store.ask(SettingGetRequest(name="default_app"), SettingGetReply)).value is None
    assert (
        await store.ask(SettingPutRequest(name="default_app", value="notes"), SettingPutReply)
    ).changed
    assert not (
        await store.ask(SettingPutRequest(name="default_app", value="notes"), SettingPutReply)
    ).changed
    assert (
        await store.ask(SettingGetRequest(name="default_app"), SettingGetReply)
    ).value == "notes"
