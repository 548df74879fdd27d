"""The runtime's guard: the first code of every script a Surface runs (issue 27, finding 4).

A Surface's CSP (`_surface_book.surface_headers`, `connect-src 'none'`) governs fetch, XHR,
WebSocket and every element, but not WebRTC: an `RTCPeerConnection` with a `stun:` or `turn:`
server sends STUN over UDP and TURN over TCP (its username can carry data out) whatever the
CSP says, and Chromium ignores CSP3's `webrtc 'block'` ("Unrecognized directive", measured on
Chromium 156). So the hostbridge serves every script under `/surfaces/` with this guard at its
head: it deletes the WebRTC interfaces (`RTCPeerConnection`, `webkitRTCPeerConnection`, every
other `RTC…`) from the realm it runs in, and if one cannot be deleted it throws, so that
script runs no further (fail closed).

Why at the head of every script and not once per document: a Surface's child frame (`srcdoc`,
which its CSP's `frame-src 'none'` does not stop) is a realm of its own, with WebRTC afresh,
whose scripts the parent's guard never reaches. But every realm in a Surface's frame runs a
script served here before any other code, or none at all: its CSP allows no inline script,
eval, `javascript:` URL, worker or framed URL; and a child frame of a sandboxed frame has an
opaque origin of its own, so no realm reaches into another's globals (measured). A script's
directive prologue (`"use strict"`) stays first, so a strict script stays strict; line numbers
stay as they are (the guard is one line, on the script's first).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["SURFACE_GUARD", "guarded_script"]

SURFACE_GUARD: Final = (
    b';(function(){"use strict";var g=globalThis,n=Object.getOwnPropertyNames(g),i;'
    b"for(i=0;i<n.length;i++){if(/^(?:webkit)?RTC/.test(n[i])){try{delete g[n[i]];}catch(e){}"
    b'if(n[i] in g)throw new Error("LineUp: this Surface may not use WebRTC");}}})();'
)
_BOM: Final = b"\xef\xbb\xbf"
# Comments and white space, then a "use strict" directive (with its `;`, if any).
_PROLOGUE: Final = re.compile(
    rb"""\A(?:\s|//[^\n]*\n|/\*.*?\*/)*(["'])use strict\1[ \t]*;?""", re.DOTALL
)


def guarded_script(source: bytes) -> bytes:
    """`source` as a Surface gets it: the guard first, after its BOM and "use strict", if any."""
    bom = _BOM if source.startswith(_BOM) else b""
    body = source[len(bom) :]
    prologue = _PROLOGUE.match(body)
    at = prologue.end() if prologue is not None else 0
    return bom + body[:at] + SURFACE_GUARD + body[at:]
