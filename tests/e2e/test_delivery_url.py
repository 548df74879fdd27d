"""Installs from a URL (issue 15): HTTPS always, HTTP only to loopback and only while the
runtime runs in development (its embedded AppServer: focus config `dev`). The bundle is served
by a tiny HTTP server the test runs on 127.0.0.1; a server that answers the wrong thing gives
`download_failed` (or the verify code of what it sent), and nothing is cached or started.

Through the runtime: the happy path, a non-loopback host, loopback HTTP outside development,
and the servers that answer HTML, garbage, a 500, a redirect or nothing. The bounds (a body
larger than a bundle may be, a server too slow) are proven on focus's download itself, with
the bounds made small."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from lineup.actors.focus import _install
from lineup.actors.kernel import ActorKind, ErrorCode, LineUpError
from lineup.sdk.bundle import SigningKey
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.bundles import (
    app_of,
    build_bundle,
    install,
    listing,
    start_delivery,
    trust,
)
from lineup.tests.support.runtime import CONVERSATION, agent_client
from lineup.tests.support.tree import attach

KEY = SigningKey(b"\x05" * 32)
WAIT: Final = 30.0
MAX_REQUEST: Final = 8192  # what the test server reads of a request, at most


Handler = Callable[[trio.SocketStream], Any]


def answer(status: str, body: bytes, content_type: str = "application/octet-stream") -> Handler:
    async def send(stream: trio.SocketStream) -> None:
        head = (
            f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        await stream.send_all(head.encode() + body)

    return send


async def hang_up(stream: trio.SocketStream) -> None:
    pass  # closes without a byte


async def redirect(stream: trio.SocketStream) -> None:
    head = "HTTP/1.1 302 Found\r\nLocation: /bundle\r\nContent-Length: 0\r\n\r\n"
    await stream.send_all(head.encode())


async def endless(stream: trio.SocketStream) -> None:
    """A body with no length that never ends (until the client hangs up)."""
    await stream.send_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
    while True:
        await stream.send_all(b"x" * 4096)


async def too_slow(stream: trio.SocketStream) -> None:
    await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
    await trio.sleep_forever()  # the client's deadline ends it


class Server:
    """HTTP/1.1 on 127.0.0.1, one canned answer per path; a request is read bounded."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self.port = 0
        self.paths: list[str] = []

    async def serve(
        self,
        *,
        task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        await trio.serve_listeners(self._one, listeners, task_status=task_status)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def _one(self, stream: trio.SocketStream) -> None:
        async with stream:
            request = b""
            while b"\r\n\r\n" not in request and len(request) < MAX_REQUEST:
                chunk = await stream.receive_some(MAX_REQUEST)
                if not chunk:
                    return
                request += chunk
            path = request.split(b" ", 2)[1].decode()
            self.paths.append(path)
            handler = self.routes.get(path, answer("404 Not Found", b"", "text/plain"))
            try:
                await handler(stream)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the client hung up first (a bound, a deadline)


async def serve(nursery: trio.Nursery, routes: dict[str, Handler]) -> Server:
    server = Server(routes)
    await nursery.start(server.serve)
    return server


def nothing_of(data_dir: Path, runtime: Any, scope: str = "deliver") -> None:
    assert not (data_dir / "bundles" / scope).exists()
    assert f"miniapp:{scope}" not in runtime.supervisor.children


async def test_a_loopback_url_installs_in_development_and_bad_servers_change_nothing(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    trust(data_dir, KEY.public)
    good = build_bundle(tmp_path / "src", KEY, version="1.0")
    server = await serve(
        nursery,
        {
            "/bundle": answer("200 OK", good),
            "/html": answer("200 OK", b"<!doctype html><p>a login page</p>", "text/html"),
            "/garbage": answer("200 OK", bytes(range(256)) * 4),
            "/error": answer("500 Internal Server Error", b"oops", "text/plain"),
            "/moved": redirect,
            "/closes": hang_up,
        },
    )
    runtime = await start_delivery(nursery, data_dir)  # embedded AppServer: development
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    refusals = [
        (server.url("/bundle", host="192.0.2.1"), ErrorCode.URL_NOT_ALLOWED),  # not loopback
        (f"ftp://127.0.0.1:{server.port}/bundle", ErrorCode.URL_NOT_ALLOWED),
        (server.url("/html"), ErrorCode.BUNDLE_MALFORMED),
        (server.url("/garbage"), ErrorCode.BUNDLE_MALFORMED),
        (server.url("/error"), ErrorCode.DOWNLOAD_FAILED),
        (server.url("/moved"), ErrorCode.DOWNLOAD_FAILED),  # never followed
        (server.url("/closes"), ErrorCode.DOWNLOAD_FAILED),
    ]
    for n, (url, code) in enumerate(refusals):
        done = await install(cli, f"op-bad-{n}", url=url)
        assert (done.state, done.code) == ("failed", code.value), url
        nothing_of(data_dir, runtime)
    assert "/bundle" not in server.paths  # the refused URLs were never fetched

    done = await install(cli, "op-url", url=server.url("/bundle"))
    assert (done.state, done.kind, done.version) == ("completed", "install", "1.0")
    assert (data_dir / "bundles" / "deliver" / "1.0" / "bundle.lineup").read_bytes() == good
    app = app_of(await listing(cli), "deliver")
    assert (app.version, app.state, app.source) == ("1.0", "active", "installed")
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    revision = await agent.revision_with("deliver.echo")
    await agent.client.call_tool(
        CONVERSATION, "deliver.echo", {"text": "hi"}, revision, call_id="c-url"
    )
    done = await agent.terminal("c-url")
    assert done["type"] == "lineup.v1.tool.result", done
    assert done["payload"]["result"]["version"] == "1.0"


async def test_loopback_http_outside_development_is_not_allowed(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    trust(data_dir, KEY.public)
    server = await serve(
        nursery, {"/bundle": answer("200 OK", build_bundle(tmp_path / "src", KEY))}
    )
    runtime = await start_delivery(nursery, data_dir, dev=False)  # as with an external AppServer
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    for n, host in enumerate(("127.0.0.1", "localhost")):
        done = await install(cli, f"op-{n}", url=server.url("/bundle", host=host))
        assert (done.state, done.code) == ("failed", ErrorCode.URL_NOT_ALLOWED.value)
    assert server.paths == []
    nothing_of(data_dir, runtime)
    assert app_of(await listing(cli), "deliver") is None


@pytest.mark.parametrize(
    ("route", "bound"),
    # Made small, the time bound is still what a loaded machine needs to connect and ask: it
    # bounds the whole exchange, and the slow server must see the request it then stalls.
    [("endless", ("MAX_BUNDLE_BYTES", 10_000)), ("slow", ("DOWNLOAD_TIMEOUT", 2.0))],
)
async def test_a_download_is_bounded_in_size_and_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str, bound: tuple[str, float]
) -> None:
    monkeypatch.setattr(_install, bound[0], bound[1])
    async with trio.open_nursery() as nursery:
        server = await serve(nursery, {"/endless": endless, "/slow": too_slow})
        with trio.fail_after(WAIT), pytest.raises(LineUpError) as failed:
            await _install.download(server.url(f"/{route}"), dev=True)
        nursery.cancel_scope.cancel()
    assert failed.value.code is ErrorCode.DOWNLOAD_FAILED
    assert server.paths == [f"/{route}"]
    assert not (tmp_path / "bundles").exists()


async def test_a_download_within_the_bounds_is_the_bytes_served(tmp_path: Path) -> None:
    body = bytes(range(256)) * 40
    async with trio.open_nursery() as nursery:
        server = await serve(nursery, {"/b": answer("200 OK", body)})
        got = await _install.download(server.url("/b"), dev=True)
        nursery.cancel_scope.cancel()
    assert got == body
