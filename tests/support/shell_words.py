"""The Shell's sentences for codes (`hostbridge/web/js/core/words.js`), read by Python tests.

The table there is one literal (`code: "sentence",` a line); the demo Agent and the App
Registry say the codes they meet with the same sentences, and their tests compare."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import lineup

WORDS_JS: Final = Path(lineup.__file__).parent / "hostbridge" / "web" / "js" / "core" / "words.js"
_ENTRY: Final = re.compile(r'^\s+([a-z_]+): "([^"\\]*)",$', re.MULTILINE)


def shell_sentences() -> dict[str, str]:
    """code → sentence, as words.js has them."""
    source = WORDS_JS.read_text()
    table = source[source.index("export const SENTENCES") : source.index("});")]
    found = dict(_ENTRY.findall(table))
    assert len(found) > 90, "words.js's table was not read"
    return found
