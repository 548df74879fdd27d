"""TLS to an AppServer (`lineup.wire.client`): an https one is verified, and a plain-http one
costs no CA bundle."""

from __future__ import annotations

import ssl

import pytest
import trio

from lineup.tests.support.raw_http import TLS_CERTIFICATE, Seen, answer, raw_server, tls_server
from lineup.wire import client as http

WAIT = 30.0


async def hello(seen: Seen, stream: trio.abc.Stream) -> bytes | None:
    return answer(200, {"hello": seen.path})


async def test_an_https_appserver_with_a_certificate_nobody_trusts_is_unreachable() -> None:
    async with raw_server(hello, tls=tls_server()) as server, http.HttpClient(server.url) as c:
        with pytest.raises(http.Unreachable), trio.fail_after(WAIT):
            await c.request("GET", "/v1/sync", max_bytes=1024)
    assert server.seen == []  # no request crossed the refused handshake


async def test_an_https_appserver_is_talked_to_over_tls_once_its_certificate_is_trusted() -> None:
    trusting = ssl.create_default_context(cafile=TLS_CERTIFICATE)
    async with (
        raw_server(hello, tls=tls_server()) as server,
        http.HttpClient(server.url, ssl_context=trusting) as c,
    ):
        with trio.fail_after(WAIT):
            got = await c.request("GET", "/v1/sync", max_bytes=1024)
    assert (got.status, got.body) == (200, b'{"hello": "/v1/sync"}')


async def test_a_plain_http_appserver_loads_no_ca_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_bundle() -> ssl.SSLContext:
        raise AssertionError("a CA bundle loaded for plain HTTP")

    monkeypatch.setattr(http, "verifying_context", no_bundle)
    async with raw_server(hello) as server, http.HttpClient(server.url) as c:
        with trio.fail_after(WAIT):
            got = await c.request("GET", "/", max_bytes=1024)
    assert got.status == 200


def test_the_default_verification_checks_certificates_and_host_names() -> None:
    context = http.verifying_context()
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0
