"""The error codes and who is at fault for each (`facts/errors.py`), and the table of them that
docs/architecture.md shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final, get_args

import pytest

from lineup.actors.kernel import ErrorCode as KernelErrorCode
from lineup.actors.kernel import LineUpError
from lineup.facts.errors import FAULT, FAULTS, ErrorCode, Fault
from lineup.tests.support.process import modules_after

ROOT: Final = Path(__file__).resolve().parents[2]
DOCS: Final = ROOT / "docs" / "architecture.md"
ROW: Final = re.compile(r"^\| `([^`]*)` \| ([^|]*?) \| (.*) \|$")


def documented() -> dict[str, str]:
    """The docs' error-code table: code -> who is at fault."""
    text = DOCS.read_text()
    section = text.split("\n## Error codes\n", 1)[1].split("\n## ", 1)[0]
    rows = [ROW.match(line) for line in section.splitlines() if line.startswith("| `")]
    assert all(rows), "a row of the table that is not `| `code` | fault | meaning |`"
    codes = [row.group(1) for row in rows if row]
    assert len(codes) == len(set(codes)), "a code listed twice"
    return {row.group(1): row.group(2) for row in rows if row}


def test_every_code_has_one_fault_of_the_closed_set() -> None:
    assert set(FAULT) == set(ErrorCode), sorted(set(ErrorCode) - set(FAULT))
    assert set(FAULT.values()) <= set(FAULTS)
    assert get_args(Fault) == FAULTS


@pytest.mark.parametrize("code", list(ErrorCode), ids=str)
def test_a_refusal_says_the_fault_of_its_code(code: ErrorCode) -> None:
    assert code.fault == FAULT[code]
    assert LineUpError(code, "why").fault == FAULT[code]


def test_the_codes_the_kernel_exports_are_these() -> None:
    assert KernelErrorCode is ErrorCode


def test_the_documented_table_lists_every_code_with_its_fault() -> None:
    assert documented() == {code.value: fault for code, fault in FAULT.items()}


def test_each_fault_is_defined_in_the_docs_and_the_module() -> None:
    text = DOCS.read_text().split("\n## Error codes\n", 1)[1].split("\n## ", 1)[0]
    module = (ROOT / "facts" / "errors.py").read_text()
    for fault in FAULTS:
        assert f"- **{fault}**: " in text
        assert f"\n`{fault}`\n    " in module


def test_the_codes_load_no_io_and_no_other_module_of_lineup() -> None:
    loaded = modules_after("import lineup.facts.errors")
    assert {"trio", "socket", "apsw", "pydantic"} & loaded == set()
    assert {m for m in loaded if m.startswith("lineup.")} == {"lineup.facts", "lineup.facts.errors"}


def test_the_codes_the_shell_sends_are_codes_of_the_enum() -> None:
    """The Shell's bridge (hostbridge/web/js/core/bridge.js) answers a Surface with codes of
    its own making: its `CODES` table and every `code: "…"` it writes are `ErrorCode`s."""
    bridge = (ROOT / "hostbridge" / "web" / "js" / "core" / "bridge.js").read_text()
    table = bridge.split("export const CODES = {", 1)[1].split("};", 1)[0]
    sent = set(re.findall(r': "([a-z_]+)"', table)) | set(
        re.findall(r'\bcode: "([a-z_]+)"', bridge)
    )
    assert len(sent) >= 8  # the table's six, and the bridge's own deadline and absence
    assert sent <= {code.value for code in ErrorCode}, sorted(sent - set(ErrorCode))
