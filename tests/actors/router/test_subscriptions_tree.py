"""The delivery chain (`actors/router/_subscriptions.py`) in a real tree, joined as the
transport: a text for a disabled app is refused `app_disabled` and audited, while a repeat of
one its inbox took before the disable is the store's duplicate, as it always was."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.actors.focus.messages import AppEnableRequest, InventoryReply
from lineup.actors.kernel import ActorKind, ErrorCode
from lineup.tests.support.tree import attach, audit_rows

from .test_inbound import hand_over, inbox, text, tree_and_supervisor


async def test_a_disabled_apps_new_text_is_refused_and_a_repeat_of_an_old_one_is_a_duplicate(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader, supervisor = await tree_and_supervisor(nursery, tmp_path)
        assert await hand_over(transport, text("before")) == [("before", "accepted")]
        switch = await attach(nursery, supervisor, ActorKind.HOSTBRIDGE, "switch")
        off = AppEnableRequest(app_scope="probe", enabled=False)
        assert (await switch.request("focus", off, expect=InventoryReply)).disabled_apps == (
            "probe",
        )

        outcomes = await hand_over(transport, text("before"), text("after"))

        assert outcomes == [("before", "duplicate"), ("after", "rejected")]
        assert await inbox(reader) == ["before"]
        rows = await audit_rows(
            reader,
            lambda rows: any(r.subject_id == "after" for r in rows),
            event_prefix="router.envelope_rejected",
        )
        assert [r.code for r in rows] == [ErrorCode.APP_DISABLED.value]
        nursery.cancel_scope.cancel()
