"""Markdown in an item, as the Shell gets it: a safe token tree (`_markdown`), made here, in
trusted code, so a MiniApp's view never carries markup the Shell would render as such.

`TreeCache` parses each text once, whatever the number of Shells and reconnects, off the event
loop when it is long, and bounds both what it remembers and the size of one tree.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Final

import trio

from lineup.sdk.protocol import ViewItem

from ._markdown import markdown_tree

__all__ = ["INLINE_PARSE_LIMIT", "MAX_TREE_BYTES", "TREE_CACHE_BYTES", "TreeCache"]

INLINE_PARSE_LIMIT: Final = 2048  # characters; longer Markdown is parsed on a worker thread
TREE_CACHE_BYTES: Final = 64 * 1024 * 1024  # token trees remembered, compact JSON
MAX_TREE_BYTES: Final = 2 * 1024 * 1024  # one message's tree (a Shell frame holds 4 Mi chars)
_RESERVED: Final = frozenset({"id", "order", "rev", "markdown", "tree"})


class TreeCache:
    """Markdown → token tree, remembered up to `TREE_CACHE_BYTES` of trees: an item is
    parsed once whatever the number of Shells and reconnects, and long text is parsed on a
    worker thread (a hostile 256 KiB message can take seconds), never on the event loop that
    serves the Shells. A tree larger than `MAX_TREE_BYTES` is replaced by the text as one
    paragraph: the message is shown whole, only unformatted."""

    def __init__(self, budget: int = TREE_CACHE_BYTES) -> None:
        self._trees: OrderedDict[str, tuple[list[dict[str, object]], int]] = OrderedDict()
        self._budget = budget
        self._used = 0

    async def tree(self, markdown: str) -> list[dict[str, object]]:
        return (await self._sized_tree(markdown))[0]

    async def _sized_tree(self, markdown: str) -> tuple[list[dict[str, object]], int]:
        made = self._sized_tree_now(markdown)
        if made is not None:
            return made
        return self._keep(markdown, await trio.to_thread.run_sync(_bounded_tree, markdown))

    def _sized_tree_now(self, markdown: str) -> tuple[list[dict[str, object]], int] | None:
        """The tree remembered, or made here if the text is short; None if it is for a
        worker thread to make."""
        cached = self._trees.get(markdown)
        if cached is not None:
            self._trees.move_to_end(markdown)
            return cached
        if len(markdown) > INLINE_PARSE_LIMIT:
            return None
        return self._keep(markdown, _bounded_tree(markdown))

    def _keep(
        self, markdown: str, made: tuple[list[dict[str, object]], int]
    ) -> tuple[list[dict[str, object]], int]:
        self._trees[markdown] = made
        self._used += made[1]
        while self._used > self._budget and len(self._trees) > 1:
            _, (_, dropped) = self._trees.popitem(last=False)
            self._used -= dropped
        return made

    async def shown(self, item: ViewItem) -> tuple[dict[str, Any], int]:
        """An item as the Shell gets it, its Markdown (if any) turned into a token tree, and
        about how many bytes it takes in a frame."""
        markdown = item.fields.get("markdown")
        tree = await self._sized_tree(markdown) if isinstance(markdown, str) else None
        return _shown(item, tree)

    def shown_now(self, item: ViewItem) -> tuple[dict[str, Any], int] | None:
        """`shown`, made here on the event loop; None when its Markdown is long and not
        remembered (its tree is for a worker thread to make: `shown`)."""
        markdown = item.fields.get("markdown")
        if not isinstance(markdown, str):
            return _shown(item, None)
        tree = self._sized_tree_now(markdown)
        return None if tree is None else _shown(item, tree)


def _shown(
    item: ViewItem, tree: tuple[list[dict[str, object]], int] | None
) -> tuple[dict[str, Any], int]:
    """The item as the Shell gets it, with its Markdown's `tree` (if it has Markdown), and
    about how many bytes it takes in a frame."""
    shown: dict[str, Any] = {k: v for k, v in item.fields.items() if k not in _RESERVED}
    size = len(item.model_dump_json().encode())
    markdown = item.fields.get("markdown")
    if tree is not None and isinstance(markdown, str):
        shown["tree"], tree_size = tree
        size += tree_size - len(markdown.encode())
    return {**shown, "id": item.id, "order": item.order, "rev": item.rev}, size


def _bounded_tree(markdown: str) -> tuple[list[dict[str, object]], int]:
    """The tree of `markdown` and its size (compact JSON), within `MAX_TREE_BYTES`."""
    tree = markdown_tree(markdown)
    size = len(json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_TREE_BYTES:
        tree = [{"t": "p", "c": [{"t": "text", "v": markdown}]}]
        size = len(markdown.encode()) + 32
    return tree, size
