"""What an AppServer client verifies TLS against, by its URL's scheme."""

from __future__ import annotations

import ssl
from urllib.parse import urlsplit

__all__ = ["tls_verify"]


def tls_verify(base_url: str) -> ssl.SSLContext | bool:
    """httpx's default (the CA bundle) for an https AppServer. A plain-http one (the loopback
    reference AppServer) gets a context that trusts no certificate: loading the bundle costs
    ~40 ms per client, and TLS to anywhere, were it ever attempted, fails verification."""
    if urlsplit(base_url).scheme == "https":
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies hostnames; trusts no CA
