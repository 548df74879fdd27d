"""The exercises' invariants (Surfaces' session data, capability requests, artifacts) pass on a
healthy record and catch each way they can break, when fed broken evidence; and the drill app's
facts the exercises rely on are the runtime's."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from lineup.facts.artifacts import artifact_id_of
from lineup.ops.drill._artifacts import ArtifactStore, Wanted, check_artifacts
from lineup.ops.drill._prompts import ENDINGS, PURPOSE, CapabilityAudit, Plan, check_requests
from lineup.ops.drill._session_data import (
    SessionLog,
    check_no_write_after_end,
    check_session_data,
)
from lineup.ops.drill._surfaces import SurfacesExercise, _Asked
from lineup.ops.drill.drillapp import (
    ASK_PURPOSE,
    MAX_ARTIFACT,
    Drill,
    artifact_bytes,
    artifact_request_id,
)
from lineup.sdk.protocol import MAX_ARTIFACT_BYTES
from lineup.sdk.tools import manifest_of

# ------------------------------------------------------------------ session data


def _log() -> SessionLog:
    """Pad p1: acked 1 and 2, a lost write that landed (3); pad p2: acked 1, read after."""
    log = SessionLog()
    for value in ({"w": 1}, {"w": 2}, {"w": 3}):
        log.sent("p1", value)
    log.acked("p1", 1, {"w": 1})
    log.read("p1", (1, {"w": 1}), 1, {"w": 1})
    log.acked("p1", 2, {"w": 2})
    log.sent("p2", {"w": 9})
    log.read("p2", None, 0, None)
    log.acked("p2", 1, {"w": 9})
    log.read("p2", (1, {"w": 9}), 1, {"w": 9})
    return log


def _stored() -> dict[str, tuple[int, dict[str, int] | None]]:
    return {"p1": (3, {"w": 3}), "p2": (1, {"w": 9})}


def test_session_data_check_passes_on_a_healthy_record() -> None:
    rule = check_session_data(_log(), _stored())
    assert rule.passed, rule.examples


@pytest.mark.parametrize(
    ("stored", "breach"),
    [
        ({"p1": (1, {"w": 1}), "p2": (1, {"w": 9})}, "p1: stored revision 1, acked 2"),
        (
            {"p1": (2, {"w": 1}), "p2": (1, {"w": 9})},
            "p1: stored another value at acked revision 2",
        ),
        (
            {"p1": (4, {"w": 7}), "p2": (1, {"w": 9})},
            "p1: stored revision 4 holds a value nobody sent",
        ),
        ({"p1": (3, {"w": 3})}, "p2: acked revision 1, no row in the store"),
    ],
)
def test_session_data_check_catches_a_lost_or_foreign_value(
    stored: dict[str, tuple[int, dict[str, int] | None]], breach: str
) -> None:
    rule = check_session_data(_log(), stored)
    assert not rule.passed
    assert rule.examples == [breach]


def test_session_data_check_catches_two_values_acknowledged_at_one_revision() -> None:
    log = _log()
    log.acked("p1", 2, {"w": 3})
    assert check_session_data(log, _stored()).examples == [
        "p1: two values acknowledged at revision 2"
    ]


def test_session_data_check_catches_a_read_older_than_an_acknowledgement() -> None:
    log = _log()
    log.read("p1", (2, {"w": 2}), 1, {"w": 1})
    log.read("p2", (1, {"w": 9}), 1, {"w": 0})
    assert check_session_data(log, _stored()).examples == [
        "p1: read revision 1 after 2 was acked",
        "p2: read another value at acked revision 1",
    ]


def test_no_write_after_end_check_catches_a_write_after_the_instance_ended() -> None:
    times = {"p1": (10.0, 12.5), "p2": (11.0, None), "p3": (13.0, 12.75)}
    rule = check_no_write_after_end(times)
    assert not rule.passed
    assert rule.examples == ["p3: written 0.250 s after it ended"]
    del times["p3"]
    assert check_no_write_after_end(times).passed


# ------------------------------------------------------------------ capability requests


def _plans() -> list[Plan]:
    return [
        Plan("r-allow", "allow", "app", 0.0, [("completed", None)]),
        Plan("r-deny", "deny", "surface", 0.0, [("permission_denied", "permission_denied")]),
        Plan("r-cancel", "cancel", "surface", 0.0, [("cancelled_by_user", "cancelled_by_user")]),
        Plan("r-expire", "expire", "app", 0.0),  # its call closed meanwhile: no answer
        Plan("r-hushed", "hushed", "surface", 0.0, [("failed", "rate_limited")] * 2),
    ]


def _finals() -> dict[str, list[tuple[str, str]]]:
    return {
        "r-allow": [("gateway.capability.completed", "completed")],
        "r-deny": [("gateway.capability.refused", "permission_denied")],
        "r-cancel": [("gateway.capability.refused", "cancelled_by_user")],
        "r-expire": [("gateway.capability.refused", "operation_expired")],
        "r-hushed": [("gateway.capability.refused", "rate_limited")],
    }


def test_capability_check_passes_on_one_final_row_each_agreeing_with_the_answers() -> None:
    rule = check_requests(_plans(), CapabilityAudit(_finals()))
    assert rule.passed, rule.examples
    assert {p.script for p in _plans()} == set(ENDINGS)


def test_capability_check_catches_a_request_without_or_with_two_final_rows() -> None:
    finals = _finals()
    del finals["r-expire"]  # asked of the user, and never ended (no gateway killed)
    finals["r-allow"] = finals["r-allow"] * 2
    assert check_requests(_plans(), CapabilityAudit(finals, {"r-expire": 1.0})).examples == [
        "r-allow: 2 final audit rows",
        "r-expire: 0 final audit rows",
    ]


def test_capability_check_catches_an_ending_its_script_does_not_allow() -> None:
    finals = _finals()
    finals["r-expire"] = [("gateway.capability.refused", "permission_denied")]
    assert check_requests(_plans(), CapabilityAudit(finals)).examples == [
        "r-expire: scripted expire, ended permission_denied"
    ]


def test_capability_check_catches_an_answer_that_disagrees_with_the_audit() -> None:
    plans = _plans()
    plans[0].answers.append(("expired", "operation_expired"))  # a second, other answer
    plans[1].answers[0] = ("completed", None)
    assert check_requests(plans, CapabilityAudit(_finals())).examples == [
        "r-allow: got expired/operation_expired, audited completed",
        "r-deny: got completed/None, audited permission_denied",
    ]


def test_a_request_asked_before_the_gateway_was_killed_may_end_actor_restarted_once() -> None:
    """Asked at 10.0: `actor_restarted` is an ending only if the gateway was SIGKILLed after
    it was asked; none at all is a breach either way (the restarted gateway ends it)."""
    plan = Plan("r-kept", "expire", "app", 0.0)
    restarted = {**_finals(), "r-kept": [("gateway.capability.failed", "actor_restarted")]}
    killed_after = CapabilityAudit(restarted, {"r-kept": 10.0}, (5.0, 12.0))
    assert killed_after.ended_with_gateway(plan)
    assert check_requests([*_plans(), plan], killed_after).passed

    killed_before = CapabilityAudit(restarted, {"r-kept": 10.0}, (5.0,))
    assert check_requests([plan], killed_before).examples == [
        "r-kept: scripted expire, ended actor_restarted"
    ]
    never_ended = CapabilityAudit(_finals(), {"r-kept": 10.0}, (5.0, 12.0))
    assert check_requests([plan], never_ended).examples == ["r-kept: 0 final audit rows"]


def test_a_request_never_asked_and_never_answered_needs_no_final_row() -> None:
    never = Plan("r-never", "allow", "app", 0.0)  # its call closed before the app asked
    assert check_requests([never], CapabilityAudit({})).passed
    decided = Plan("r-never", "allow", "app", 0.0, [("completed", None)])
    assert check_requests([decided], CapabilityAudit({})).examples == [
        "r-never: 0 final audit rows"
    ]


def test_the_prompt_names_the_request_as_the_drill_app_words_it() -> None:
    assert PURPOSE == ASK_PURPOSE


# ------------------------------------------------------------- a Surface's capability requests


class _Shell:
    """The user's Shell socket as the Surfaces exercise sends on it: every frame kept."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    async def send(self, frame: dict[str, Any]) -> bool:
        self.frames.append(frame)
        return True


def _pad_asking() -> tuple[SurfacesExercise, Plan, _Shell]:
    """The exercise with one request asked at pad `pad-1`'s Surface, not sent yet."""
    exercise, shell = SurfacesExercise(seed=7), _Shell()
    exercise._user = shell
    exercise.surface_of["pad-1"] = "surface-1"
    plan = exercise.plans["cap0"] = Plan("cap0", "expire", "surface", 0.0)
    exercise._asked["cap0"] = _Asked("pad-1")
    return exercise, plan, shell


SURFACE_GONE = {"type": "surface.reply", "error": {"code": "surface_not_found"}}


async def test_a_request_whose_one_send_the_hostbridge_refused_was_never_relayed() -> None:
    exercise, plan, shell = _pad_asking()
    await exercise._send_ask(plan)

    exercise._answered(plan, SURFACE_GONE)

    assert [frame["request_id"] for frame in shell.frames] == ["cap0"]

    assert (plan.over, exercise.unrelayed) == (True, {"cap0"})


async def test_a_refused_resend_leaves_an_unanswered_send_that_may_have_been_asked() -> None:
    """The drill once breached its own rule here: a request sent, not answered, and sent again
    after its Surface was gone is refused by the hostbridge, yet its first send may have reached
    the gateway (which then ends it, audited). Not relayed only when every send was refused."""
    exercise, plan, shell = _pad_asking()
    await exercise._send_ask(plan)  # relayed, perhaps: no answer yet
    await exercise._send_ask(plan)  # its Surface is gone meanwhile

    exercise._answered(plan, SURFACE_GONE)

    assert [frame["request_id"] for frame in shell.frames] == ["cap0", "cap0"]  # one id

    assert (plan.over, exercise.unrelayed) == (False, set())
    exercise._answered(plan, SURFACE_GONE)  # the first send's answer, refused too
    assert (plan.over, exercise.unrelayed) == (True, {"cap0"})


@pytest.mark.parametrize(
    ("sends", "unrelayed"), [(0, {"cap0"}), (1, set())], ids=["unsent", "sent"]
)
async def test_a_request_whose_pad_ended_counts_as_never_relayed_only_if_never_sent(
    sends: int, unrelayed: set[str]
) -> None:
    exercise, plan, shell = _pad_asking()
    for _ in range(sends):
        await exercise._send_ask(plan)  # unanswered when the pad ends

    exercise.gone.add("pad-1")

    assert len(shell.frames) == sends
    assert exercise._pad_gone(plan)
    assert (plan.over, exercise.unrelayed) == (True, unrelayed)


# ------------------------------------------------------------------ artifacts


def _artifacts(tmp_path: Path) -> tuple[dict[str, Wanted], dict[str, dict[str, object]], Path]:
    wanted, told = {}, {}
    folder = tmp_path / "artifacts"
    folder.mkdir()
    for n, size in enumerate((1, 700, 4096)):
        call_id = f"c{n}"
        data = artifact_bytes(n, size)
        artifact_id = artifact_id_of("drill", artifact_request_id(call_id))
        sha = hashlib.sha256(data).hexdigest()
        wanted[call_id] = Wanted(call_id, artifact_id, size, sha)
        if n < 2:  # the third one's call ended without a result, and nothing was written
            (folder / artifact_id).write_bytes(data)
            told[call_id] = {
                "artifact_id": artifact_id,
                "size": size,
                "sha256": sha,
                "verified": True,
            }
    return wanted, told, folder


def _found(wanted: dict[str, Wanted], folder: Path, *rows: str) -> ArtifactStore:
    files = {}
    temporary = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            temporary.append(entry.name)
        else:
            data = entry.read_bytes()
            files[entry.name] = (len(data), hashlib.sha256(data).hexdigest())
    by_call = {w.call_id: w for w in wanted.values()}
    return ArtifactStore(
        {by_call[c].artifact_id: (by_call[c].size, by_call[c].sha256) for c in rows},
        files,
        temporary,
    )


def test_artifact_check_passes_when_every_acknowledged_artifact_is_whole(tmp_path: Path) -> None:
    wanted, told, folder = _artifacts(tmp_path)
    rule = check_artifacts(wanted, told, _found(wanted, folder, "c0", "c1"))
    assert rule.passed, rule.examples


def test_artifact_check_catches_a_half_written_file_and_a_temporary_one(tmp_path: Path) -> None:
    wanted, told, folder = _artifacts(tmp_path)
    (folder / wanted["c1"].artifact_id).write_bytes(artifact_bytes(1, 700)[:300])
    (folder / f".{wanted['c2'].artifact_id}.tmp").write_bytes(b"half")
    rule = check_artifacts(wanted, told, _found(wanted, folder, "c0", "c1"))
    assert rule.examples == [
        f"{wanted['c1'].artifact_id}: its file is not whole",
        f".{wanted['c2'].artifact_id}.tmp: a temporary file left",
    ]


def test_artifact_check_catches_a_missing_row_or_file_and_wrong_bytes(tmp_path: Path) -> None:
    wanted, told, folder = _artifacts(tmp_path)
    (folder / wanted["c0"].artifact_id).unlink()
    told["c1"] = {**told["c1"], "verified": False}
    rule = check_artifacts(wanted, told, _found(wanted, folder, "c0"))
    assert rule.examples == [
        "c1: the app read back other bytes",
        f"{wanted['c0'].artifact_id}: its file is missing",
    ]
    told["c1"] = {**told["c1"], "verified": True}
    assert check_artifacts(wanted, told, _found(wanted, folder, "c0")).examples == [
        f"c1: {wanted['c1'].artifact_id} answered, no row in the store",
        f"{wanted['c0'].artifact_id}: its file is missing",
    ]


def test_artifact_check_catches_a_row_no_call_asked_for(tmp_path: Path) -> None:
    wanted, told, folder = _artifacts(tmp_path)
    found = _found(wanted, folder, "c0", "c1")
    found.rows["art_stranger"] = (1, "0" * 64)
    assert check_artifacts(wanted, told, found).examples == [
        "art_stranger: a row no drill call asked for"
    ]


def test_artifact_bytes_are_one_call_s_own_and_of_its_size() -> None:
    assert [len(artifact_bytes(3, s)) for s in (1, 65, 262_144)] == [1, 65, 262_144]
    assert artifact_bytes(3, 64) != artifact_bytes(4, 64)
    assert MAX_ARTIFACT == MAX_ARTIFACT_BYTES


def test_the_drill_app_manifest_is_its_code_s() -> None:
    folder = Path(__file__).resolve().parents[3] / "ops" / "drill" / "drillapp"
    from lineup.ops.drill.drillapp.drillpad import DrillPad
    from lineup.sdk.manifest import load_manifest

    for app_class, manifest in ((Drill, folder), (DrillPad, folder / "drillpad")):
        stored = load_manifest((manifest / "manifest.json").read_bytes())
        assert stored == manifest_of(app_class)
