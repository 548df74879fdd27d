"""A MiniApp's stdout and stderr go to its own log, escaped and capped, never to the runtime's.

The line splitting and escaping are checked on their own (and for every input, by hypothesis);
then a real sandboxed MiniApp-kind process, forked by the real zygote, floods its output with
escape sequences and the test reads its log file, the runtime's own stdout and stderr, and
`lineup logs`.
"""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.kernel import ActorKind, ErrorCode, LineUpError
from lineup.supervisor import ChildSpec, Restart
from lineup.supervisor._applog import (
    CUT_MARK,
    MAX_FILE,
    MAX_LINE,
    AppLog,
    LineSplitter,
    app_log_path,
    escape,
    format_line,
)
from lineup.tests.support.tree import start_tree

from . import _noisy

NOISY = "lineup.tests.supervisor._noisy:NoisyActor"
SCOPE = "noisy"
# What may appear in a log line: printable characters, no control or format character.
UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (out|err) (.*)")


# ---------------------------------------------------------------------- escaping, splitting


def test_control_characters_become_visible_escapes_and_backslashes_are_doubled() -> None:
    assert escape(b"\x1b[31mred\x1b[0m\a") == "\\x1b[31mred\\x1b[0m\\x07"
    assert escape(b"tab\there\rcr") == "tab\\x09here\\x0dcr"
    assert escape(b"back\\slash \\x1b") == "back\\\\slash \\\\x1b"  # unambiguous


def test_unicode_format_characters_and_bytes_that_are_not_utf8_are_escaped() -> None:
    assert escape("\u202eevil\u202c".encode()) == "\\u202eevil\\u202c"
    assert escape("line\u2028sep \u0085nel".encode()) == "line\\u2028sep \\u0085nel"
    assert escape(b"\xff\xfe ok") == "\\xff\\xfe ok"
    assert escape("caf\u00e9 \u65e5\u672c".encode()) == "caf\u00e9 \u65e5\u672c"  # kept


@given(
    st.one_of(
        st.binary(max_size=300),
        st.text(max_size=100).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )
)
def test_every_escaped_line_is_one_line_of_printable_text(raw: bytes) -> None:
    text = escape(raw)
    assert not UNSAFE.search(text)
    assert "\n" not in text and "\r" not in text
    text.encode("utf-8")  # strictly: no lone surrogate is left
    assert unescape(text) == raw  # and nothing is ambiguous: the bytes come back


def unescape(text: str) -> bytes:
    """The inverse of `escape`, as a reader of the log would decode it."""
    out = bytearray()
    codes = {"x": 2, "u": 4, "U": 8}
    i = 0
    while i < len(text):
        if text[i] != "\\":
            out += text[i].encode()
            i += 1
        elif text[i + 1] == "\\":
            out += b"\\"
            i += 2
        else:
            width = codes[text[i + 1]]
            code = int(text[i + 2 : i + 2 + width], 16)
            is_byte = text[i + 1] == "x" and code >= 0x80  # a byte that was not UTF-8
            out += bytes([code]) if is_byte else chr(code).encode()
            i += 2 + width
    return bytes(out)


def test_lines_are_split_on_newlines_across_chunks_and_the_last_one_at_the_end() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"one\ntw") == [(b"one", False)]
    assert splitter.feed(b"o\n\nthr") == [(b"two", False), (b"", False)]
    assert splitter.feed(b"ee") == []
    assert splitter.finish() == [(b"three", False)]
    assert splitter.finish() == []


def test_a_line_past_the_limit_is_cut_and_the_rest_of_it_dropped() -> None:
    splitter = LineSplitter(limit=4)
    assert splitter.feed(b"abcd\n") == [(b"abcd", False)]  # exactly the limit: whole
    assert splitter.feed(b"abcdefgh") == [(b"abcd", True)]
    assert splitter.feed(b"ijkl") == []  # still the same line: dropped
    assert splitter.feed(b"mn\nok\n") == [(b"ok", False)]
    assert splitter.feed(b"ab") == []
    assert splitter.feed(b"cdef\nxy\n") == [(b"abcd", True), (b"xy", False)]


@given(st.lists(st.binary(max_size=40), max_size=20), st.data())
def test_how_output_is_chunked_never_changes_the_lines(
    chunks: list[bytes], data: st.DataObject
) -> None:
    whole = b"".join(chunks)
    one = LineSplitter(limit=16)
    expected = one.feed(whole) + one.finish()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(whole)), max_size=8)))
    pieces = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)], strict=True)]
    other = LineSplitter(limit=16)
    got = [line for piece in pieces if piece for line in other.feed(piece)] + other.finish()
    assert got == expected
    assert all(len(line) <= 16 for line, _ in got)


def test_a_log_line_has_a_utc_timestamp_the_stream_and_the_escaped_text() -> None:
    line = format_line(0.25, "err", b"\x1b[2Jboom", cut=True)
    assert line == f"1970-01-01T00:00:00.250Z err \\x1b[2Jboom{CUT_MARK}\n"


def test_an_app_scope_that_is_not_one_never_becomes_a_path() -> None:
    assert app_log_path("/d", "task-dashboard") == Path("/d/logs/task-dashboard.log")
    for bad in ("../etc", "a/b", "", "Upper", "x" * 64, "miniapp:chat"):
        with pytest.raises(LineUpError) as caught:
            app_log_path("/d", bad)
        assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


def test_the_log_rotates_once_and_no_file_grows_past_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    log = AppLog(path, max_file=100)
    for n in range(30):
        log.write([f"line {n:02d} " + "x" * 20 + "\n"])  # 29 bytes a line
    rotated = path.with_name("app.log.1")
    assert path.stat().st_size <= 100 and rotated.stat().st_size <= 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.log", "app.log.1"]
    text = rotated.read_text() + path.read_text()
    assert text.splitlines()[-1].startswith("line 29 ")
    numbers = [int(line.split()[1]) for line in text.splitlines()]
    assert numbers == list(range(numbers[0], 30))  # the newest, in order, nothing lost between
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_log_that_cannot_be_written_costs_the_lines_not_an_exception(tmp_path: Path) -> None:
    log = AppLog(tmp_path / "gone" / "app.log")
    log.write(["lost\n"])  # its directory does not exist: nothing raised
    assert not (tmp_path / "gone").exists()


# ---------------------------------------------------------------------- a real MiniApp process


def noisy_spec(data_dir: Path, flood: int) -> ChildSpec:
    sandbox = {"profile": "miniapp", "app_scope": SCOPE, "data_dir": str(data_dir)}
    return ChildSpec(
        f"miniapp:{SCOPE}",
        ActorKind.MINIAPP,
        NOISY,
        restart=Restart.TEMPORARY,
        config={"sandbox": sandbox, "flood": flood},
    )


async def run_noisy(nursery: trio.Nursery, data_dir: Path, flood: int) -> tuple[Path, Path]:
    """Run the noisy app until it has exited and its output is all read; its log files."""
    supervisor = await start_tree(nursery, [noisy_spec(data_dir, flood)], data_dir)
    child = supervisor.children[f"miniapp:{SCOPE}"]
    with trio.fail_after(30):
        await supervisor.wait_until(lambda: child.exited.is_set() and supervisor.capturing == 0)
    path = app_log_path(data_dir, SCOPE)
    return path.with_name(path.name + ".1"), path


async def test_a_sandboxed_apps_output_lands_escaped_in_its_log_and_never_on_the_runtimes(
    nursery: trio.Nursery, data_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Each flood line takes ~390 bytes once escaped: over twice the cap in all.
    rotated, current = await run_noisy(nursery, data_dir, flood=7_000)
    out, err = capfd.readouterr()  # the zygote, and so every child, shares the test's fds
    assert _noisy.MARK not in out and _noisy.MARK not in err
    assert "\x1b" not in out + err

    data = rotated.read_bytes() + current.read_bytes()
    assert b"\x1b" not in data and b"\x07" not in data
    lines = data.decode().splitlines()
    parsed = [LINE.fullmatch(line) for line in lines]
    assert all(parsed), [line for line, match in zip(lines, parsed, strict=True) if not match][:3]
    assert not any(UNSAFE.search(line) for line in lines)
    ours = {match.group(2) for match in parsed if match}
    mark = _noisy.MARK
    assert f"{mark} \\x1b[31mred\\x1b[0m bell\\x07 back\\\\slash" in ours
    assert ("err", f"{mark} title \\x1b]0;pwned\\x07 on stderr") in {
        (m.group(1), m.group(2)) for m in parsed if m
    }
    assert f"{mark} bidi \\u202eevil\\u202c and \u00e9t\u00e9" in ours
    assert f"{mark} bytes \\xff\\xfe\\x0d" in ours
    assert f"{mark} last, no newline" in ours
    long = next(text for text in ours if text.startswith(f"{mark} long "))
    assert long.endswith(CUT_MARK) and len(long) == MAX_LINE + len(CUT_MARK)

    # The cap: rotated once, each part at most MAX_FILE, the oldest flood lines gone.
    assert rotated.stat().st_size <= MAX_FILE and current.stat().st_size <= MAX_FILE
    assert sorted(p.name for p in current.parent.iterdir()) == [f"{SCOPE}.log", f"{SCOPE}.log.1"]
    assert not any(text.startswith(f"{mark} flood 000000 ") for text in ours)
    assert any(text.startswith(f"{mark} flood 006999 ") for text in ours)
    assert stat.S_IMODE(current.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(current.stat().st_mode) == 0o600

    # `lineup logs` prints both parts, the rotated one first, exactly as written.
    result = await trio.run_process(
        [sys.executable, "-m", "lineup", "logs", SCOPE, "--data-dir", str(data_dir)],
        capture_stdout=True,
        capture_stderr=True,
    )
    assert result.stdout == data
    assert result.stderr == b""


def test_lineup_logs_refuses_a_name_that_is_no_app_scope_and_says_when_there_is_no_log(
    data_dir: Path,
) -> None:
    def logs(scope: str) -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable, "-m", "lineup", "logs", scope, "--data-dir", str(data_dir)]
        return subprocess.run(command, capture_output=True, timeout=30, check=False)

    refused = logs("../lineup")
    assert refused.returncode == 1
    assert refused.stderr == b"lineup: error: '../lineup' is not an app_scope\n"
    missing = logs("task-dashboard")
    assert missing.returncode == 1 and missing.stdout == b""
