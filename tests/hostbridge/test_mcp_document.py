"""An MCP App's document as a Surface serves it (`hostbridge/_mcp_document.py`)."""

from __future__ import annotations

from lineup.hostbridge._mcp_document import inline_script_url, split_inline_scripts

PREFIX = "/surfaces/i1/"


def test_each_inline_script_the_browser_runs_is_moved_to_a_file_with_its_attributes() -> None:
    doc = (
        b'<!DOCTYPE html><html><head><script type="module" crossorigin>import {a} from "b";'
        b" if (a < 1) {}</script>\n<style>p{color:red}</style></head><body>"
        b'<script>var end = "</scr" + "ipt>";</script><SCRIPT id="x">go()</SCRIPT></body></html>'
    )
    split = split_inline_scripts(doc, PREFIX)
    assert split.scripts == (
        b'import {a} from "b"; if (a < 1) {}',
        b'var end = "</scr" + "ipt>";',
        b"go()",
    )
    assert split.html == (
        b'<!DOCTYPE html><html><head><script type="module" crossorigin '
        b'src="/surfaces/i1/_lineup/inline/0.js"></script>\n<style>p{color:red}</style></head>'
        b'<body><script src="/surfaces/i1/_lineup/inline/1.js"></script>'
        b'<script id="x" src="/surfaces/i1/_lineup/inline/2.js"></script></body></html>'
    )
    assert inline_script_url(PREFIX, 2) == "/surfaces/i1/_lineup/inline/2.js"


def test_data_blocks_and_external_scripts_stay_as_they_are() -> None:
    doc = (
        b'<script type="application/json">{"a": "<b>"}</script>'
        b'<script type="importmap">{"imports": {}}</script>'
        b'<script src="app.js"></script><script type="text/template"><p>{{x}}</p></script>'
    )
    split = split_inline_scripts(doc, PREFIX)
    assert (split.html, split.scripts) == (doc, ())


def test_a_classic_script_keeps_its_order_and_no_attribute_that_would_break_it() -> None:
    # Inline, `async` and `defer` were ignored: with a src they would reorder the script; an
    # integrity or a nonce would no longer match once the guard is put first.
    doc = b'<script async defer integrity="sha384-x" nonce="n" data-k="a&quot;b">run()</script>'
    module = b'<script type="module" async nonce="n">run()</script>'
    assert split_inline_scripts(doc, PREFIX).html == (
        b'<script data-k="a&quot;b" src="/surfaces/i1/_lineup/inline/0.js"></script>'
    )
    assert split_inline_scripts(module, PREFIX).html == (
        b'<script type="module" async src="/surfaces/i1/_lineup/inline/0.js"></script>'
    )


def test_a_document_that_is_not_utf8_is_served_as_it_is() -> None:
    doc = b"<script>\xff</script>"
    split = split_inline_scripts(doc, PREFIX)
    assert (split.html, split.scripts) == (doc, ())


def test_an_unterminated_script_is_left_inline_for_the_csp_to_refuse() -> None:
    doc = b"<p>x</p><script>never closed"
    split = split_inline_scripts(doc, PREFIX)
    assert (split.html, split.scripts) == (doc, ())
