"""Every link of README.md and of the pages of docs/ stays in the repository: a relative path to
a file that exists here (and, into a Markdown page, to one of its headings), or an `http(s)`
address of a public site. Never a path that leaves the repository (`../shared/…`), a local
address, or another scheme."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

import pytest

from ._runner import FENCE, ROOT

PAGES: Final = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
CODE_SPAN: Final = re.compile(r"(`+).*?\1", re.S)
INLINE: Final = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE: Final = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
AUTOLINK: Final = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*)>")
HEADING: Final = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
UP_PATH: Final = re.compile(r"(?<![\w.])(?:\.\./)+[\w.-][\w./-]*")  # `../shared/DESIGN.md`


def links_of(markdown: str) -> list[str]:
    """The targets of the page's links and images, outside code."""
    prose = CODE_SPAN.sub("", FENCE.sub("", markdown))
    return [m.group(1) for rx in (INLINE, REFERENCE, AUTOLINK) for m in rx.finditer(prose)]


def anchors_of(markdown: str) -> set[str]:
    """The ids GitHub gives the page's headings: the text without its markup, lowercased,
    punctuation dropped, spaces as hyphens; a repeat gets `-1`, `-2`, …"""
    seen: dict[str, int] = {}
    anchors = set()
    for m in HEADING.finditer(FENCE.sub("", markdown)):
        text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).strip().lower()
        slug = "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def refusal(page: Path, target: str) -> str | None:
    """Why `target`, linked from `page`, leaves the repository or leads nowhere (None: fine)."""
    parts = urlsplit(target)
    if parts.scheme in ("http", "https"):
        host = (parts.hostname or "").lower()
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            public = "." in host and not host.endswith((".local", ".localhost", ".internal"))
        else:
            public = address.is_global
        return None if public else f"{target}: not a public site"
    if parts.scheme or parts.netloc or target.startswith("/"):
        return f"{target}: not a path in the repository"
    path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if not path.is_relative_to(ROOT.resolve()):
        return f"{target}: outside the repository"
    if not path.exists():
        return f"{target}: no such file"
    if (
        parts.fragment
        and path.suffix == ".md"
        and parts.fragment not in anchors_of(path.read_text())
    ):
        return f"{target}: no heading #{parts.fragment} in {path.name}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_link_of_a_page_stays_in_the_repository(page: Path) -> None:
    refused = [why for target in links_of(page.read_text()) if (why := refusal(page, target))]
    assert not refused, f"{page.name}: " + "; ".join(refused)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_no_page_names_a_path_outside_the_repository(page: Path) -> None:
    """Not even as text: a reader of the repository alone could not follow it."""
    outside = [
        m.group(0)
        for m in UP_PATH.finditer(page.read_text())
        if not (page.parent / m.group(0)).resolve().is_relative_to(ROOT.resolve())
    ]
    assert not outside, f"{page.name}: {outside}"


def test_the_pages_link_to_one_another() -> None:
    """The README's index reaches every page of docs/."""
    linked = {urlsplit(target).path for target in links_of((ROOT / "README.md").read_text())}
    pages = {f"docs/{page.name}" for page in PAGES if page.parent.name == "docs"}
    assert pages <= linked, sorted(pages - linked)


def test_what_counts_as_leaving_the_repository() -> None:
    page = ROOT / "docs" / "cli.md"
    links = links_of("[a](../../shared/DESIGN.md) `[b](nowhere.md)` <http://127.0.0.1:8787/>")
    assert links == ["../../shared/DESIGN.md", "http://127.0.0.1:8787/"]
    assert (
        refusal(page, "../../shared/DESIGN.md") == "../../shared/DESIGN.md: outside the repository"
    )
    assert refusal(page, "http://127.0.0.1:8787/") is not None
    assert refusal(page, "https://localhost/") is not None
    assert refusal(page, "file:///etc/passwd") is not None
    assert refusal(page, "nowhere.md") == "nowhere.md: no such file"
    assert refusal(page, "mcp.md#no-such-heading") is not None
    assert refusal(page, "https://modelcontextprotocol.io/") is None
    assert refusal(page, "../README.md") is None
    assert refusal(page, "#lineup-run") is None
    assert anchors_of("# Drills: `lineup drill`\n## A\n## A\n") == {
        "drills-lineup-drill",
        "a",
        "a-1",
    }
