"""The guard at the head of every Surface script (`hostbridge/_surface_guard.py`); that it
keeps WebRTC from a Surface in real Chromium is tests/browser/test_surface_network_e2e.py."""

from __future__ import annotations

import pytest

from lineup.hostbridge._surface_guard import SURFACE_GUARD, guarded_script

BOM = b"\xef\xbb\xbf"


def test_a_script_without_a_directive_gets_the_guard_first_on_its_own_first_line() -> None:
    source = b"const x = 1;\nconsole.log(x);\n"
    served = guarded_script(source)
    assert served == SURFACE_GUARD + source
    assert b"\n" not in SURFACE_GUARD  # the script's line numbers stay as they were
    assert served.count(b"\n") == source.count(b"\n")


@pytest.mark.parametrize(
    "prologue",
    [
        b'"use strict";',
        b"'use strict';",
        b'"use strict"',
        b'// a comment\n/* and\n another */\n  "use strict" ;',
    ],
)
def test_a_use_strict_directive_stays_first_so_a_strict_script_stays_strict(
    prologue: bytes,
) -> None:
    rest = b"\nlet a = 1;\n"
    assert guarded_script(prologue + rest) == prologue + SURFACE_GUARD + rest


def test_a_byte_order_mark_stays_first() -> None:
    assert (
        guarded_script(BOM + b'"use strict";x()') == BOM + b'"use strict";' + SURFACE_GUARD + b"x()"
    )


def test_a_use_strict_that_is_no_directive_gets_the_guard_before_it() -> None:
    source = b'f();\n"use strict";\n'
    assert guarded_script(source) == SURFACE_GUARD + source
