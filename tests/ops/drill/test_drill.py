"""A short drill in the suite: the real runtime under dozens of seeded faults of every kind
(SIGKILL and SIGSTOP of every child, the AppServer's included, and of an MCP app's server;
the link cut, slowed and failing), with the Agent's questions answered, dismissed and left to
expire, then every invariant checked from the AppServer's record and the store.

The seed is random unless LINEUP_DRILL_SEED is set; a failure prints it and the command that
replays the run.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from lineup.ops.drill import KINDS, TARGETS, DrillOptions, run_drill
from lineup.ops.drill._asking import SCRIPTS
from lineup.ops.drill._check import ENDINGS
from lineup.ops.drill._mcp import IN_FLIGHT
from lineup.ops.drill._prompts import ENDINGS as CAPABILITY_ENDINGS
from lineup.ops.drill._prompts import RESTARTED

EXERCISE_APPS = frozenset(
    {
        "miniapp:drillpkg",
        "miniapp:drilldev",
        "miniapp:drill-pad",
        "miniapp:drillmcp",
        "miniapp:drillmcp/server",
    }
)


@pytest.mark.timeout(300)
async def test_a_short_drill_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    """Over a minute by design: a question's expiry is at least one minute (seed 000), and the
    drill asks expiring questions and waits for them to expire, beside the 55 s of faults (long
    enough for a capability request after a denied one and the 30 s quiet that follows it)."""
    seed = int(os.environ.get("LINEUP_DRILL_SEED") or random.SystemRandom().randrange(10**6))
    options = DrillOptions(
        seed=seed,
        duration=55,
        faults=75,
        data_dir=tmp_path / "drill",
        report=tmp_path / "report.json",
    )
    report, invariants = await run_drill(options)
    broken = {rule.name: rule.examples for rule in invariants if not rule.passed}
    assert not broken, f"drill seed {seed} broke {broken}; replay: {options.replay()}"

    faults = report["faults"]
    assert set(faults["by_kind"]) == set(KINDS), f"seed {seed}: {faults['by_kind']}"
    # About 8 of 19 faults are kills (31 of 75 expected; 14 the fewest of 20,000 seeds).
    assert faults["by_kind"]["kill"] >= 10, f"seed {seed}: {faults['by_kind']}"
    # Kills go round every child (a MiniApp that is not running then gives way to the next
    # child), and every killed child came back.
    # The exercises' apps (drillpkg, drilldev, drill-pad) run only while in use: they may
    # give way every time in a short run; every other child is always there to be killed.
    always = [t for t in TARGETS if t not in EXERCISE_APPS]
    assert len(set(faults["kills_by_target"]) & set(always)) >= len(always) - 2, f"seed {seed}"
    # Every killed actor came back. A MiniApp killed as its last instance closed (a close, an
    # update) has no replacement to wait for: it starts again on demand.
    unrecovered = [
        t["target"] for t in faults["timeline"] if t["kind"] == "kill" and t["recovery_ms"] is None
    ]
    assert all(t.startswith("miniapp:") for t in unrecovered), f"seed {seed}: {unrecovered}"
    assert report["recovery_ms"]["count"] >= faults["by_kind"]["kill"] - 2, f"seed {seed}"
    assert report["operations"]["tool_calls"] > 500, f"seed {seed}"
    assert report["operations"]["user_messages"] > 10, f"seed {seed}"
    assert (tmp_path / "report.svg").read_text().startswith("<svg")
    # The product's parts were driven too (each exercise's invariants are in `broken`).
    installs = report["exercises"]["installs"]
    assert installs["operations"] >= 5, f"seed {seed}: {installs}"  # the opening's first five
    assert {"install", "rollback", "remove"} <= set(installs["by_kind"]), f"seed {seed}: {installs}"
    assert installs["endings"].get("completed"), f"seed {seed}: {installs}"
    reloads = report["exercises"]["dev_reloads"]
    assert reloads["saves"] >= 4, f"seed {seed}: {reloads}"
    mcp = report["exercises"]["mcp"]
    # At least a call a slot: a seed whose link faults come early backs the load up, and the
    # MCP client, which waits for each answer, then gets few (the load's backlog goes first).
    assert mcp["by_method"].get("tools/call", 0) >= IN_FLIGHT, f"seed {seed}: {mcp}"
    # The MCP app's calls (its adapter and server killed and paused among the targets): each
    # answered once, its own number or a stable code (the invariant); some answered whole.
    mcp_apps = report["exercises"]["mcp_apps"]
    assert mcp_apps["by_outcome"].get("ok", 0) > 0, f"seed {seed}: {mcp_apps}"

    # The Agent asked, and every ending its script plans happened at least once, the expiries
    # too (asked first, they end after this short load, and quiescence waits for them).
    (rule,) = (r for r in invariants if r.name == "interactions_one_terminal_state")
    assert rule.passed, f"seed {seed}: {rule.examples}"
    asked = report["operations"]["interactions"]
    assert asked["asked"] >= len(SCRIPTS), f"seed {seed}: {asked}"
    assert set(asked["by_script"]) == set(SCRIPTS), f"seed {seed}: {asked['by_script']}"
    ended = asked["ended_by_script"]
    for script, endings in ENDINGS.items():
        again = asked["asked_after_the_load"]
        assert set(ended.get(script, ())) & endings, f"seed {seed}: {script}: {ended}; {again}"

    # The exercises: Surfaces written, reloaded and closed; capability requests ended every
    # way their scripts say (denied and dismissed at a Surface, allowed and left to expire by
    # the drill app, hushed after a Deny); artifacts of several sizes, each read back whole.
    exercises = report["exercises"]
    surfaces, artifacts = exercises["surfaces"], exercises["artifacts"]
    # Each part done at least once: how many pads a short run gets through is the machine's
    # load's (4 closed of 8 opened with the suite's four workers beside it; the long drill has
    # hundreds), and the invariants cover every write made.
    assert surfaces["writes_acked"] > 0, f"seed {seed}: {surfaces}"
    assert surfaces["reloads"] > 0 and surfaces["pads_closed"] > 0, f"seed {seed}: {surfaces}"
    got: dict[str, set[str]] = {}
    for by_script in (
        surfaces["capabilities_ended_by_script"],
        exercises["capabilities"]["ended_by_script"],
    ):
        for script, outcomes in by_script.items():
            got.setdefault(script, set()).update(outcomes)
    # Each request asked ended as its script says (the invariants). Which scripts a short run
    # reaches: the Surface's (allow, expire) always, as they are no tool calls; the drill app's
    # (deny, cancel, hushed) each come by a `drill.ask` call, and on a loaded machine, with
    # installs and dev saves changing the inventory faster than the Agent behind a faulted link
    # hears of it, those calls may be refused stale until the load ends (a finding of the
    # drill's, in the closing note of issue 27); the long drill has every script many times.
    # An unanswered request waits a minute: in a short run a gateway kill often comes first,
    # and the restarted gateway ends it `actor_restarted` (its kept row), as the invariant allows.
    unanswered = CAPABILITY_ENDINGS["expire"] | {RESTARTED}
    assert got.get("allow", set()) & CAPABILITY_ENDINGS["allow"], f"seed {seed}: {got}"
    assert got.get("expire", set()) & unanswered, f"seed {seed}: {got}"
    # At least one whole: on a loaded machine most artifact calls can be refused stale (the
    # starvation in the closing note of issue 27); the invariants cover every one made.
    assert artifacts["written_and_verified"] > 0, f"seed {seed}: {artifacts}"
