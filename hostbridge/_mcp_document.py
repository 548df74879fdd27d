"""An MCP App's document as a Surface serves it: each inline script moved to a file of its own.

Theory of operation
-------------------
An MCP App's UI is one HTML file whose code is inline (`<script type="module">…</script>`, the
ext-apps `App` class bundled in), and the spec's default CSP allows inline script. A Surface's
does not (`_surface_book.surface_headers`): the runtime's guard (`_surface_guard`) must be the first
code of every realm a Surface runs, and an inline script allowed in the document would be
allowed in any `srcdoc` child the page makes as well — a realm of its own, where no guard runs,
so WebRTC would be back. So the hostbridge serves the document with each inline script replaced
by a `<script src>` with the same attributes (`inline_script_url(prefix, n)`), and serves each
of those as any Surface script: the guard first. Inline styles stay: a style runs no code.

A script is moved if it is one the browser would run: no `src`, and no `type` or a JavaScript
one or `module`. Data blocks (`application/json`, templates) stay as they are; an inline import
map stays too, and the CSP refuses it (Chromium loads no external import map), which only an
app that needs one would notice. A classic script loses `async` and `defer` (ignored inline, they
would reorder it once it has a `src`); `integrity` and `nonce` go (the guard changes its bytes).

The split is found by Python's HTML tokenizer. Where it and the browser might read a script's
end differently (a crafted document), nothing opens: whatever the browser still finds inline
is refused by the CSP, as every inline script is; only that app's own page breaks.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Final

__all__ = ["SplitDocument", "inline_script_url", "split_inline_scripts"]

INLINE_DIR: Final = "_lineup/inline/"  # under the Surface's path: the runtime's, never the app's
_JS_TYPES: Final = frozenset(
    {
        "",
        "module",
        "text/javascript",
        "application/javascript",
        "application/ecmascript",
        "text/ecmascript",
        "text/jscript",
        "text/livescript",
        "application/x-javascript",
        "application/x-ecmascript",
    }
)
_DROPPED: Final = frozenset({"src", "integrity", "nonce"})
_CLASSIC_DROPPED: Final = frozenset({"async", "defer"})


@dataclass(frozen=True)
class SplitDocument:
    html: bytes  # the document as served: each moved script a `<script src>` of its own
    scripts: tuple[bytes, ...]  # the moved scripts' code, in document order


def inline_script_url(prefix: str, index: int) -> str:
    """Where the `index`th moved script is served: `prefix` is the Surface's own path."""
    return f"{prefix}{INLINE_DIR}{index}.js"


def _runs(attrs: list[tuple[str, str | None]]) -> bool:
    names = {name for name, _ in attrs}
    kind = next((value or "" for name, value in attrs if name == "type"), "")
    return "src" not in names and kind.strip().lower() in _JS_TYPES


class _Scripts(HTMLParser):
    """The inline scripts the browser would run: (tag start, body start, body end, tag end,
    attributes), as offsets into the text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=False)
        self._text = text
        self._lines = [0]
        for i, char in enumerate(text):
            if char == "\n":
                self._lines.append(i + 1)
        self._open: tuple[int, int, list[tuple[str, str | None]]] | None = None
        self.found: list[tuple[int, int, int, int, list[tuple[str, str | None]]]] = []

    def _offset(self) -> int:
        line, column = self.getpos()
        return self._lines[line - 1] + column

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open = None
        if tag == "script" and _runs(attrs):
            start = self._offset()
            self._open = (start, start + len(self.get_starttag_text() or ""), attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag != "script" or self._open is None:
            return
        start, body, attrs = self._open
        self._open = None
        closing = self._offset()
        end = self._text.find(">", closing)
        if end != -1:
            self.found.append((start, body, closing, end + 1, attrs))


def _tag(attrs: list[tuple[str, str | None]], src: str) -> str:
    module = any(name == "type" and (v or "").strip().lower() == "module" for name, v in attrs)
    kept = [
        (name, value)
        for name, value in attrs
        if name not in _DROPPED and (module or name not in _CLASSIC_DROPPED)
    ]
    parts = [
        name if value is None else f'{name}="{html.escape(value, quote=True)}"'
        for name, value in kept
    ]
    parts.append(f'src="{html.escape(src, quote=True)}"')
    return f"<script {' '.join(parts)}></script>"


def split_inline_scripts(document: bytes, prefix: str) -> SplitDocument:
    """`document` with each inline script it runs moved to `inline_script_url(prefix, n)`. A
    document that is not UTF-8 is served as it is (its inline scripts refused by the CSP)."""
    try:
        text = document.decode("utf-8")
    except UnicodeDecodeError:
        return SplitDocument(document, ())
    parser = _Scripts(text)
    parser.feed(text)
    parser.close()
    out: list[str] = []
    scripts: list[bytes] = []
    at = 0
    for start, body, closing, end, attrs in parser.found:
        out.append(text[at:start])
        out.append(_tag(attrs, inline_script_url(prefix, len(scripts))))
        scripts.append(text[body:closing].encode("utf-8"))
        at = end
    out.append(text[at:])
    return SplitDocument("".join(out).encode("utf-8"), tuple(scripts))
