"""The registry finds every message of a protocol loaded in parts (`PROTOCOL_HOMES`).

Each check runs in a fresh interpreter: this one has long since imported every protocol.
"""

from __future__ import annotations

import json
import subprocess
import sys

from lineup.actors.kernel.messages import REGISTRY

# A process that names one area of the store's protocol (as the hostbridge does), and no other.
ONE_AREA = "import lineup.actors.store.app_sessions.messages\n"


def in_fresh_interpreter(code: str) -> object:
    """What `code` leaves in `result`, run after `ONE_AREA` in a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", f"import json\n{ONE_AREA}{code}\nprint(json.dumps(result))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


def store_tags() -> dict[str, str]:
    import lineup.actors.store._actor  # noqa: F401  every message the store serves or sends

    return {
        tag: f"{cls.__module__}.{cls.__qualname__}"
        for tag, cls in REGISTRY.items()
        if tag.startswith("store.") and cls.__module__.startswith("lineup.actors.store.")
    }


def test_every_store_message_is_found_where_only_one_area_of_its_protocol_was_loaded() -> None:
    tags = store_tags()
    found = in_fresh_interpreter(
        "from lineup.actors.kernel.messages import REGISTRY, lookup\n"
        f"tags = {sorted(tags)!r}\n"
        "before = sorted(t for t in tags if t in REGISTRY)\n"
        "classes = {t: lookup(t) for t in tags}\n"
        "result = [before, {t: f'{c.__module__}.{c.__qualname__}' for t, c in classes.items()}]"
    )
    assert isinstance(found, list)
    before, classes = found
    assert len(before) < len(tags) / 4  # the area alone was loaded: the rest was found
    assert classes == tags


def test_a_tag_no_protocol_defines_is_unknown() -> None:
    result = in_fresh_interpreter(
        "from lineup.actors.kernel.messages import lookup\n"
        "result = [lookup('store.no_such.thing'), lookup('no_such.thing'), lookup('')]"
    )
    assert result == [None, None, None]
