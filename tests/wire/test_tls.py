"""What an AppServer client verifies TLS against (`wire/_tls.py`): the runtime's transport and
the Agent client both take it."""

from __future__ import annotations

import ssl

from lineup import wire


def test_a_plain_http_appserver_loads_no_ca_bundle_and_https_keeps_httpx_verifying() -> None:
    plain = wire.tls_verify("http://127.0.0.1:8787")
    assert isinstance(plain, ssl.SSLContext)
    # It trusts no certificate, and still checks one: TLS, were it attempted, would fail.
    assert plain.cert_store_stats()["x509_ca"] == 0
    assert plain.verify_mode is ssl.CERT_REQUIRED and plain.check_hostname
    assert wire.tls_verify("https://appserver.example") is True
    assert wire.tls_verify("HTTPS://appserver.example") is True
