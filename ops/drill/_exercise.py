"""What the drill drives besides its core load: one part of the product, with its invariants.

Theory of operation: the core load (`_workload`, `_asking`) is the Agent's calls and questions
and the user's typing. Every other part of the product the drill covers — Surfaces and their
session data, capabilities, artifacts, installs and updates, dev reloads, `lineup mcp` clients —
is an `Exercise`, run beside that load while the same faults hit the tree. An exercise:

- `prepare(setup)`: before the runtime starts, places its files (a dev app's copy, a trusted
  key, a bundle) under the drill's own folder and returns the extra `lineup run` arguments;
- `drive(stage, seconds)`: its load, for `seconds`, through the real surfaces a user or an
  Agent has (the Shell socket, the AppServer, the CLI) — never around the runtime. It starts
  no new work after `seconds`, and may go on waiting for what it started: it is cancelled once
  the drill is quiet;
- `unsettled(stage)`: how much of its work has not ended yet (quiescence waits for 0; like the
  core load's count, it must fall as the tree recovers);
- `check(setup)`: once the runtime has stopped, its invariants, from the files the runtime left
  (the store, the data dir) and what it did itself — never from what the runtime says about
  itself;
- `report()`: its figures, which the drill's JSON report keeps under its name.

The Shell socket is shared: an exercise sees every frame the user's Shell gets by adding a
listener to `ShellUser.listeners`.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from lineup.ops.agent import AgentClient

    from ._check import Invariant
    from ._workload import LoadAgent, ShellUser

__all__ = ["QUIET_START_S", "Exercise", "Setup", "Stage", "lineup_command"]

# An exercise that changes the inventory (an install, a dev save) waits this long first: every
# run opens with one question of each script (`_asking.OPENING`), and a question posted under a
# revision that changes before the runtime reads it is refused stale. On a loaded machine the
# Agent learns of a new revision only behind the outbox's backlog, so a churning inventory from
# the first second would leave those questions refused try after try.
QUIET_START_S: Final = 10.0


@dataclass(frozen=True)
class Setup:
    """Where a run keeps its files, and its seed."""

    data_dir: Path  # the drill's own folder (exercises put their files here)
    runtime_dir: Path  # the runtime's data dir (read-only for an exercise: the store, bundles/)
    seed: int


@dataclass(frozen=True)
class Stage:
    """The running drill, as an exercise drives it."""

    setup: Setup
    user: ShellUser  # the user's Shell connection (shared: add a listener for its frames)
    agent: LoadAgent  # the load Agent (its revision, `post_call`, `post_until_taken`)
    client: AgentClient  # the Agent's session with the AppServer
    appserver_url: str  # the AppServer itself, not the drill's proxy


class Exercise(Protocol):
    name: str

    def prepare(self, setup: Setup) -> list[str]: ...

    async def drive(self, stage: Stage, seconds: float) -> None: ...

    async def unsettled(self, stage: Stage) -> int: ...

    def check(self, setup: Setup) -> list[Invariant]: ...

    def report(self) -> dict[str, Any]: ...


def lineup_command(*argv: str) -> None:
    """One `lineup` command, as a user types it (blocking: `prepare` runs before the start);
    its failure is the drill's own mistake, raised."""
    subprocess.run([sys.executable, "-m", "lineup", *argv], check=True, capture_output=True)
