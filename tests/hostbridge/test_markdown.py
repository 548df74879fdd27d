"""The Shell's safe Markdown (hostbridge/_markdown.py): only inert nodes, only safe hrefs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lineup.hostbridge._markdown import (
    ALLOWED_HREF_SCHEMES,
    MAX_DEPTH,
    MAX_INPUT_BYTES,
    NODE_TYPES,
    TRUNCATION_NOTE,
    markdown_tree,
)

Node = dict[str, object]

# Each node type and the keys it may carry (beyond "t").
SHAPES: dict[str, set[str]] = {
    "text": {"v"},
    "code": {"v"},
    "pre": {"v", "lang"},
    "a": {"href", "c"},
    "br": set(),
    "hr": set(),
    "th": {"c", "align"},
    "td": {"c", "align"},
    "ol": {"c", "start"},
}
CONTAINER_SHAPE = {"c"}


def walk(nodes: list[Node], depth: int = 1) -> Iterator[tuple[Node, int]]:
    for node in nodes:
        yield node, depth
        children = node.get("c")
        if children is not None:
            assert isinstance(children, list)
            yield from walk(children, depth + 1)


def texts(nodes: list[Node]) -> str:
    return "".join(str(n["v"]) for n, _ in walk(nodes) if n["t"] in ("text", "code", "pre"))


def of_type(nodes: list[Node], kind: str) -> list[Node]:
    return [n for n, _ in walk(nodes) if n["t"] == kind]


# Markdown-ish fragments, so hypothesis builds links, lists, HTML and nesting far more often
# than plain random text would.
FRAGMENTS = st.sampled_from(
    [
        "[", "]", "(", ")", "<", ">", "!", "*", "_", "~~", "`", "```", "\n", "\n\n", "- ", "1. ",
        "> ", "# ", "    ", "javascript:", "JaVaScRiPt:", "data:text/html,", "vbscript:",
        "file:///", "http://a.test/", "https://b.test", "mailto:x@y.test", "ftp://c", "//d.test",
        "<script>", "</script>", "<img src=x onerror=alert(1)>", "&lt;", "&#x6a;", "\x00",
        "\u202e", " ", "a", "x y", "| ", " |", "|---|", "|:-:|", "|--:|\n",
    ]
)  # fmt: skip
MARKDOWNISH = st.lists(st.one_of(FRAGMENTS, st.text(max_size=8)), max_size=40).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(), MARKDOWNISH))
def test_any_string_yields_only_allowed_nodes_and_safe_hrefs(text: str) -> None:
    tree = markdown_tree(text)
    assert isinstance(tree, list)
    for node, depth in walk(tree):
        kind = node["t"]
        assert kind in NODE_TYPES
        assert set(node) - {"t"} <= SHAPES.get(kind, CONTAINER_SHAPE)
        assert depth <= MAX_DEPTH + 1  # containers are capped; their leaves sit one below
        if kind in ("text", "code", "pre"):
            assert isinstance(node["v"], str)
        if "align" in node:
            assert node["align"] in ("left", "center", "right")
        if kind == "a":
            href = node["href"]
            assert isinstance(href, str)
            assert href.lower().startswith(ALLOWED_HREF_SCHEMES)


def test_a_script_tag_stays_literal_text() -> None:
    tree = markdown_tree("hello <script>window.__xss=1</script> there")
    assert tree == [
        {"t": "p", "c": [{"t": "text", "v": "hello <script>window.__xss=1</script> there"}]}
    ]


def test_block_html_stays_literal_text() -> None:
    tree = markdown_tree('<div onclick="x()">\n<img src=x onerror=alert(1)>\n</div>')
    assert texts(tree) == '<div onclick="x()">\n<img src=x onerror=alert(1)>\n</div>'.replace(
        "\n", ""
    )
    assert {n["t"] for n, _ in walk(tree)} <= {"p", "text", "br"}


@pytest.mark.parametrize(
    "link",
    [
        "[click](javascript:alert(1))",
        "[click](JAVASCRIPT:alert(1))",
        "[click](data:text/html,hi)",
        "[click](vbscript:msgbox)",
        "[click](/relative/path)",
        "[click](ftp://files.test/x)",
        "<javascript:alert(1)>",
    ],
)
def test_a_link_outside_the_allowed_schemes_becomes_its_text(link: str) -> None:
    tree = markdown_tree(link)
    assert of_type(tree, "a") == []
    assert "click" in texts(tree) or "javascript" in texts(tree)


@pytest.mark.parametrize(
    "href", ["http://a.test/x", "https://b.test/?q=1&r=2", "mailto:someone@c.test"]
)
def test_http_https_and_mailto_links_survive(href: str) -> None:
    tree = markdown_tree(f"see [this]({href})")
    (link,) = of_type(tree, "a")
    assert link == {"t": "a", "href": href, "c": [{"t": "text", "v": "this"}]}


def test_an_image_becomes_a_link_like_text_and_never_an_image() -> None:
    tree = markdown_tree("![a *cat*](https://img.test/cat.png) ![local](/x.png)")
    (link,) = of_type(tree, "a")
    assert link == {
        "t": "a",
        "href": "https://img.test/cat.png",
        "c": [{"t": "text", "v": "[image: a cat]"}],
    }
    assert "[image: local]" in texts(tree)


def test_an_image_inside_a_link_does_not_nest_links() -> None:
    tree = markdown_tree("[![logo](https://img.test/l.png)](https://site.test)")
    (link,) = of_type(tree, "a")
    assert link["href"] == "https://site.test"
    assert texts(tree) == "[image: logo]"


def test_nested_lists_keep_their_structure() -> None:
    tree = markdown_tree("- one\n- two\n  1. inner\n  2. more\n- three")
    assert tree == [
        {
            "t": "ul",
            "c": [
                {"t": "li", "c": [{"t": "text", "v": "one"}]},
                {
                    "t": "li",
                    "c": [
                        {"t": "text", "v": "two"},
                        {
                            "t": "ol",
                            "c": [
                                {"t": "li", "c": [{"t": "text", "v": "inner"}]},
                                {"t": "li", "c": [{"t": "text", "v": "more"}]},
                            ],
                        },
                    ],
                },
                {"t": "li", "c": [{"t": "text", "v": "three"}]},
            ],
        }
    ]


def test_an_ordered_list_keeps_its_start_number() -> None:
    (ol,) = markdown_tree("3. c\n4. d")
    assert ol["t"] == "ol"
    assert ol["start"] == 3


def test_code_blocks_keep_their_text_and_language() -> None:
    tree = markdown_tree("```python\n<b>x</b> = 1\n```\n\n    indented <i>")
    assert tree == [
        {"t": "pre", "v": "<b>x</b> = 1\n", "lang": "python"},
        {"t": "pre", "v": "indented <i>\n", "lang": None},
    ]


def test_inline_formatting_maps_to_its_nodes() -> None:
    (p,) = markdown_tree("**b** *i* ~~s~~ `c<d>`  \nnext\nline")
    assert p == {
        "t": "p",
        "c": [
            {"t": "strong", "c": [{"t": "text", "v": "b"}]},
            {"t": "text", "v": " "},
            {"t": "em", "c": [{"t": "text", "v": "i"}]},
            {"t": "text", "v": " "},
            {"t": "del", "c": [{"t": "text", "v": "s"}]},
            {"t": "text", "v": " "},
            {"t": "code", "v": "c<d>"},
            {"t": "br"},
            {"t": "text", "v": "next"},
            {"t": "br"},
            {"t": "text", "v": "line"},
        ],
    }


def test_headings_blockquotes_and_rules() -> None:
    tree = markdown_tree("## Title\n\n> quoted\n\n---")
    assert tree == [
        {"t": "h2", "c": [{"t": "text", "v": "Title"}]},
        {"t": "blockquote", "c": [{"t": "p", "c": [{"t": "text", "v": "quoted"}]}]},
        {"t": "hr"},
    ]


def test_deep_nesting_is_capped_without_losing_the_text() -> None:
    tree = markdown_tree(">" * 40 + " deep")
    depths = [depth for _, depth in walk(tree)]
    assert max(depths) <= MAX_DEPTH + 1
    assert texts(tree) == "deep"


def test_input_over_the_limit_is_truncated_with_a_note() -> None:
    tree = markdown_tree("é" * MAX_INPUT_BYTES)  # two bytes each: twice the limit
    assert texts(tree).endswith(TRUNCATION_NOTE)
    assert len(texts(tree).encode()) <= MAX_INPUT_BYTES + len(TRUNCATION_NOTE.encode())


def test_a_message_as_long_as_the_wire_allows_is_parsed_whole() -> None:
    text = "word " * (250_000 // 5)  # a 250 KB Agent message: the wire allows 256 KiB
    assert texts(markdown_tree(text)) == text.strip()


def test_empty_text_is_an_empty_tree() -> None:
    assert markdown_tree("") == []


def test_a_gfm_table_keeps_its_rows_cells_and_column_alignment() -> None:
    tree = markdown_tree("| Task | Done |\n|:-----|-----:|\n| Report | **60%** |\n| Plan |  |\n")
    assert tree == [
        {
            "t": "table",
            "c": [
                {
                    "t": "thead",
                    "c": [
                        {
                            "t": "tr",
                            "c": [
                                {"t": "th", "c": [{"t": "text", "v": "Task"}], "align": "left"},
                                {"t": "th", "c": [{"t": "text", "v": "Done"}], "align": "right"},
                            ],
                        }
                    ],
                },
                {
                    "t": "tbody",
                    "c": [
                        {
                            "t": "tr",
                            "c": [
                                {"t": "td", "c": [{"t": "text", "v": "Report"}], "align": "left"},
                                {
                                    "t": "td",
                                    "c": [{"t": "strong", "c": [{"t": "text", "v": "60%"}]}],
                                    "align": "right",
                                },
                            ],
                        },
                        {
                            "t": "tr",
                            "c": [
                                {"t": "td", "c": [{"t": "text", "v": "Plan"}], "align": "left"},
                                {"t": "td", "c": [], "align": "right"},
                            ],
                        },
                    ],
                },
            ],
        }
    ]


def descend(tree: list[Node], first: int, *path: int) -> Node:
    """`tree[first]`, then its child (`"c"`) at each index of `path` in turn."""
    node = tree[first]
    for index in path:
        children = node["c"]
        assert isinstance(children, list)
        node = children[index]
    return node


def test_a_table_without_alignment_has_none_and_html_in_a_cell_stays_text() -> None:
    tree = markdown_tree("| a |\n|---|\n| <b onclick=x>hi</b> |\n")
    cell = descend(tree, 0, 1, 0, 0)
    assert cell == {"t": "td", "c": [{"t": "text", "v": "<b onclick=x>hi</b>"}]}
    head = descend(tree, 0, 0, 0, 0)
    assert "align" not in head


def test_an_alignment_is_only_ever_one_of_three_words() -> None:
    for delimiter, align in [(":--", "left"), (":-:", "center"), ("--:", "right")]:
        tree = markdown_tree(f"| a |\n|{delimiter}|\n| b |\n")
        assert descend(tree, 0, 0, 0, 0)["align"] == align
