"""Markdown → a small JSON token tree the Shell turns into DOM nodes without innerHTML.

Theory of operation: markdown-it-py (CommonMark preset, raw HTML *off*, linkify off,
strikethrough and GFM tables on) parses the text into its flat token stream; we fold that
stream into nested nodes with an explicit stack (no recursion, so hostile nesting cannot exhaust
the Python stack), keep only the node types below, and drop every link whose scheme is not
allowed. The Shell only ever calls createElement/textContent/setAttribute on what it receives,
so nothing in a message can become markup, a script or a remote load.

The node shapes are a stable interface between `hostbridge` and the Shell
(`web/js/components/markdown.js`):

    {"t": "text", "v": str}                       literal text (raw HTML stays here, as text)
    {"t": T, "c": [node, ...]}                    T in p, strong, em, del, blockquote, ul, li,
                                                  h1, h2, h3, h4, h5, h6
    {"t": "ol", "c": [...], "start": int}         "start" only when the list does not start at 1
    {"t": "code", "v": str}                       inline code
    {"t": "pre", "v": str, "lang": str | None}    a code block (fenced or indented)
    {"t": "a", "href": str, "c": [...]}           only http:, https: and mailto: hrefs; any other
                                                  link is replaced by its children
    {"t": "br"}                                   a line break (hard *and* soft: this is chat)
    {"t": "hr"}
    {"t": T, "c": [...]}                          T in table, thead, tbody, tr (a GFM table)
    {"t": T, "c": [...], "align": A}              T in th, td; "align" (left, center, right)
                                                  only when the column's delimiter row says

There is no image node: `![alt](src)` becomes the text `[image: alt]`, wrapped in an `a` to
its src when that src is an allowed http(s) URL, so nothing loads unless the user clicks.

Bounds: input beyond `MAX_INPUT_BYTES` (UTF-8) is cut, and a final paragraph says so; containers
deeper than `MAX_DEPTH` are flattened into their nearest allowed ancestor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = [
    "ALLOWED_HREF_SCHEMES",
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "NODE_TYPES",
    "TRUNCATION_NOTE",
    "markdown_tree",
]

# The wire's envelope limit (`lineup.wire._limits.MAX_ENVELOPE_BYTES`): no message is longer,
# so every message is parsed whole; the cut only bounds what a caller could pass besides.
MAX_INPUT_BYTES = 256 * 1024
MAX_DEPTH = 12
TRUNCATION_NOTE = "… (message truncated)"
ALLOWED_HREF_SCHEMES = ("http:", "https:", "mailto:")
NODE_TYPES = frozenset(
    {
        "text", "p", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li",
        "h1", "h2", "h3", "h4", "h5", "h6", "a", "br", "hr",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip

Node = dict[str, object]

# markdown-it token type (without _open/_close) → our container type; headings use their tag.
_CONTAINERS = {
    "paragraph": "p",
    "strong": "strong",
    "em": "em",
    "s": "del",
    "blockquote": "blockquote",
    "bullet_list": "ul",
    "ordered_list": "ol",
    "list_item": "li",
    "table": "table",
    "thead": "thead",
    "tbody": "tbody",
    "tr": "tr",
    "th": "th",
    "td": "td",
}
_ALIGN = re.compile(r"^text-align:(left|center|right)$")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# A scheme is letters, digits, + - . before the first colon (RFC 3986 §3.1).
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*:)", re.IGNORECASE)

# maxNesting: markdown-it silently drops content nested deeper than this (the preset says 20);
# 64 keeps ordinary text and still bounds its recursion. MAX_DEPTH then flattens the tree.
_md = MarkdownIt(
    "commonmark", {"html": False, "linkify": False, "typographer": False, "maxNesting": 64}
)
_md.enable(["strikethrough", "table"])


def markdown_tree(text: str) -> list[Node]:
    """Parse `text` as Markdown and return the top-level nodes of its safe token tree.

    Never raises on any string input; never returns a node type outside `NODE_TYPES`, nor an
    `a` whose href is outside `ALLOWED_HREF_SCHEMES`.
    """
    truncated = False
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) > MAX_INPUT_BYTES:
        text = encoded[:MAX_INPUT_BYTES].decode("utf-8", errors="ignore")
        truncated = True
    builder = _TreeBuilder()
    builder.feed(_md.parse(text))
    roots = builder.root
    if truncated:
        roots.append({"t": "p", "c": [_text(TRUNCATION_NOTE)]})
    return roots


def allowed_href(href: str) -> bool:
    """True when `href` has an explicit scheme in `ALLOWED_HREF_SCHEMES` (case-insensitive)."""
    match = _SCHEME.match(href.strip())
    return match is not None and match.group(1).lower() in ALLOWED_HREF_SCHEMES


def _text(value: str) -> Node:
    return {"t": "text", "v": value}


class _TreeBuilder:
    """Folds markdown-it's token stream into nested nodes.

    `_stack` holds, per open token, the children list its content goes to and the node type it
    created. A token that creates no node (a hidden tight-list paragraph, a refused or nested
    link, anything past `MAX_DEPTH`) pushes its parent's list with type None, so its children
    land in the parent.
    """

    def __init__(self) -> None:
        self.root: list[Node] = []
        self._stack: list[tuple[list[Node], str | None]] = [(self.root, None)]
        self._depth = 0  # nodes actually created and still open
        self._links = 0  # `a` nodes still open: an `a` never goes inside another

    @property
    def _children(self) -> list[Node]:
        return self._stack[-1][0]

    def feed(self, tokens: Sequence[Token]) -> None:
        for token in tokens:
            if token.type == "inline":
                self.feed(token.children or [])
            elif token.nesting == 1:
                self._open(token)
            elif token.nesting == -1:
                self._close()
            else:
                self._leaf(token)

    def _open(self, token: Token) -> None:
        base = token.type.removesuffix("_open")
        kind = token.tag if base == "heading" and token.tag in _HEADINGS else _CONTAINERS.get(base)
        node: Node | None = None
        if base == "link":
            href = str(token.attrs.get("href", ""))
            if allowed_href(href) and self._links == 0:
                node = {"t": "a", "href": href, "c": []}
        elif kind is not None and not token.hidden:
            node = {"t": kind, "c": []}
            start = token.attrs.get("start")
            if kind == "ol" and isinstance(start, int) and start != 1:
                node["start"] = start
            align = _ALIGN.match(str(token.attrs.get("style", "")))
            if kind in ("th", "td") and align is not None:
                node["align"] = align.group(1)
        if node is None or self._depth >= MAX_DEPTH:
            self._stack.append((self._children, None))  # flatten: children go to the parent
            return
        children: list[Node] = []
        node["c"] = children
        self._children.append(node)
        self._stack.append((children, str(node["t"])))
        self._depth += 1
        self._links += node["t"] == "a"

    def _close(self) -> None:
        if len(self._stack) == 1:  # unbalanced stream: ignore rather than fail
            return
        _, created = self._stack.pop()
        if created is not None:
            self._depth -= 1
            self._links -= created == "a"

    def _leaf(self, token: Token) -> None:
        kind = token.type
        if kind in ("text", "html_inline", "html_block"):
            # With html off markdown-it emits raw HTML as text already; the html_* branches
            # keep that true even if the option were ever flipped.
            self._append_text(token.content)
        elif kind == "code_inline":
            self._children.append({"t": "code", "v": token.content})
        elif kind in ("fence", "code_block"):
            lang = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else None
            self._children.append({"t": "pre", "v": token.content, "lang": lang})
        elif kind in ("softbreak", "hardbreak"):
            self._children.append({"t": "br"})
        elif kind == "hr":
            self._children.append({"t": "hr"})
        elif kind == "image":
            self._image(token)
        # Anything else (a token type a future markdown-it adds) is dropped, never passed on.

    def _append_text(self, value: str) -> None:
        if not value:
            return
        children = self._children
        last = children[-1] if children else None
        if last is not None and last["t"] == "text":
            last["v"] = f"{last['v']}{value}"
        else:
            children.append(_text(value))

    def _image(self, token: Token) -> None:
        label = _text(f"[image: {_plain_text(token.children or [])}]")
        src = str(token.attrs.get("src", ""))
        linkable = self._links == 0 and self._depth < MAX_DEPTH
        if linkable and allowed_href(src) and src.lower().startswith(("http:", "https:")):
            self._children.append({"t": "a", "href": src, "c": [label]})
        else:
            self._append_text(str(label["v"]))


def _plain_text(tokens: Sequence[Token]) -> str:
    """The visible text of inline tokens (an image's alt), as markdown-it's renderer does."""
    parts: list[str] = []
    pending = list(reversed(tokens))
    while pending:
        token = pending.pop()
        if token.type in ("text", "code_inline", "html_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image" and token.children:
            pending.extend(reversed(token.children))
    return "".join(parts)
