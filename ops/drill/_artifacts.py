"""The `artifacts` exercise: the drill app writes artifacts of several sizes while the faults
hit, and none may be half-written.

Theory of operation: the Agent calls `drill.artifact` (an operation of the drill app) with a
number and a size drawn from `SIZES`; the app makes an artifact of `artifact_bytes(n, size)`
under a request id derived from the call (a re-run after a crash names the same artifact),
reads it back, and answers its id, size, SHA-256 and whether what it read was what it wrote.
The exercise knows each call's bytes, so after the runtime stopped (`check_artifacts`, from the
store read-only and the data dir's `artifacts/`):

- every artifact the Agent was told of has the bytes the call asked for: the answer's size
  and digest, the app's own read-back, the store's row and the file on disk all agree;
- every artifact row of the drill app's, acknowledged or not, names a whole file (its size
  and digest); no row comes from a call the drill did not make;
- no temporary file is left in `artifacts/` (they are written beside it, then renamed).

A file without a row (a crash between the two; the next create of that id overwrites it) is
counted in the report, not a breach: the design allows it.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from lineup.facts.artifacts import artifact_id_of

from ._calls import Calls
from ._check import Invariant, _readonly
from ._exercise import Setup, Stage
from .drillapp import artifact_bytes, artifact_request_id

__all__ = ["ArtifactStore", "ArtifactsExercise", "Wanted", "check_artifacts"]

SCOPE: Final = "drill"
# Sizes (bytes) and their weights: mostly small, some of a few pages, a few at the limit. A
# long run stays well inside an app's quota (32 MiB, 1,000 artifacts).
SIZES: Final = ((1, 3), (700, 4), (4096, 3), (65_536, 2), (262_144, 1))
EVERY_S: Final = (0.5, 2.5)
IN_FLIGHT: Final = 4
MAX_ARTIFACTS: Final = 600  # per run, within the app's quota
TAIL_S: Final = 5.0


@dataclass(frozen=True)
class Wanted:
    call_id: str
    artifact_id: str
    size: int
    sha256: str


@dataclass(frozen=True)
class ArtifactStore:
    """The drill app's artifact rows (id -> size, sha256), the files of `artifacts/` (name ->
    size, sha256) and the temporary files left there."""

    rows: dict[str, tuple[int, str]]
    files: dict[str, tuple[int, str]]
    temporary: list[str]

    @classmethod
    def read(cls, runtime_dir: Path, scope: str = SCOPE) -> ArtifactStore:
        with _readonly(runtime_dir / "lineup.db") as db:
            rows = {
                str(a): (int(size), str(sha))
                for a, size, sha in db.execute(
                    "SELECT artifact_id, size, sha256 FROM artifacts WHERE app_scope = ?",
                    (scope,),
                )
            }
        files: dict[str, tuple[int, str]] = {}
        temporary: list[str] = []
        folder = runtime_dir / "artifacts"
        for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
            if entry.name.startswith("."):
                temporary.append(entry.name)
            elif entry.is_file():
                data = entry.read_bytes()
                files[entry.name] = (len(data), hashlib.sha256(data).hexdigest())
        return cls(rows, files, temporary)


def check_artifacts(
    wanted: dict[str, Wanted], told: dict[str, dict[str, Any]], found: ArtifactStore
) -> Invariant:
    """`wanted`: every call the drill made (by call id); `told`: the results the Agent got."""
    rule = Invariant(
        "artifacts_whole",
        "every artifact the Agent was told of holds the bytes its call asked for (answer, "
        "read-back, store row and file agree); every artifact row of the drill app's names a "
        "whole file and a call the drill made; no temporary file is left",
    )
    for call_id, result in sorted(told.items()):
        want = wanted[call_id]
        answer = (result.get("artifact_id"), result.get("size"), result.get("sha256"))
        if answer != (want.artifact_id, want.size, want.sha256):
            rule.breach(f"{call_id}: answered another artifact or other bytes")
        elif result.get("verified") is not True:
            rule.breach(f"{call_id}: the app read back other bytes")
        elif want.artifact_id not in found.rows:
            rule.breach(f"{call_id}: {want.artifact_id} answered, no row in the store")
    mine = {w.artifact_id: w for w in wanted.values()}
    for artifact_id, row in sorted(found.rows.items()):
        made = mine.get(artifact_id)
        if made is None:
            rule.breach(f"{artifact_id}: a row no drill call asked for")
        elif row != (made.size, made.sha256):
            rule.breach(f"{artifact_id}: its row is not what its call wrote")
        elif found.files.get(artifact_id) != row:
            state = "missing" if artifact_id not in found.files else "not whole"
            rule.breach(f"{artifact_id}: its file is {state}")
    for name in found.temporary:
        rule.breach(f"{name}: a temporary file left")
    return rule


@dataclass
class ArtifactsExercise:
    seed: int
    name: str = "artifacts"
    wanted: dict[str, Wanted] = field(default_factory=dict)  # call id -> its artifact
    told: dict[str, dict[str, Any]] = field(default_factory=dict)  # call id -> the result
    codes: dict[str, str] = field(default_factory=dict)  # call id -> the code it ended with
    orphans: int = 0
    _calls: Calls | None = None

    def prepare(self, setup: Setup) -> list[str]:
        return []

    async def drive(self, stage: Stage, seconds: float) -> None:
        rng = random.Random(self.seed + 17)
        self._calls = Calls(stage.agent, stage.client)
        end = trio.current_time() + seconds
        await stage.agent.inventory_known()
        async with trio.open_nursery() as posts:  # each post is awaited to its end
            while trio.current_time() < end - TAIL_S and len(self.wanted) < MAX_ARTIFACTS:
                if self._update() < IN_FLIGHT:
                    size = rng.choices([s for s, _ in SIZES], [w for _, w in SIZES])[0]
                    posts.start_soon(self._make, len(self.wanted), size)
                await trio.sleep(rng.uniform(*EVERY_S))

    async def _make(self, n: int, size: int) -> None:
        assert self._calls is not None
        call_id = f"call-drill-{self.seed}-art{n}"
        data = artifact_bytes(n, size)
        artifact_id = artifact_id_of(SCOPE, artifact_request_id(call_id))
        self.wanted[call_id] = Wanted(call_id, artifact_id, size, hashlib.sha256(data).hexdigest())
        await self._calls.post(call_id, "drill.artifact", {"n": n, "size": size})

    def _update(self) -> int:
        """Take the ends of the calls; how many have not ended."""
        if self._calls is None:
            return 0
        left = 0
        for call_id in self.wanted:
            if call_id in self.told or call_id in self.codes:
                continue
            ended = self._calls.ended(call_id)
            if ended is None:
                left += 1
            elif ended.result is not None:
                self.told[call_id] = ended.result
            else:
                self.codes[call_id] = str(ended.code)
        return left

    async def unsettled(self, stage: Stage) -> int:
        return self._update()

    def check(self, setup: Setup) -> list[Invariant]:
        self._update()
        found = ArtifactStore.read(setup.runtime_dir)
        self.orphans = len(
            {w.artifact_id for w in self.wanted.values()} & (found.files.keys() - found.rows.keys())
        )
        return [check_artifacts(self.wanted, self.told, found)]

    def report(self) -> dict[str, Any]:
        return {
            "asked": len(self.wanted),
            "written_and_verified": sum(1 for r in self.told.values() if r.get("verified")),
            "by_size": dict(sorted(Counter(w.size for w in self.wanted.values()).items())),
            "not_made": dict(sorted(Counter(self.codes.values()).items())),
            "files_without_row": self.orphans,
        }
