"""Where the embedded AppServer of a running `lineup run` is: its status says (`appserver_url`),
over the data dir's owner-only control socket. `lineup agent --data-dir` and `lineup mcp
--data-dir` both find it here."""

from __future__ import annotations

from pathlib import Path

__all__ = ["RuntimeUnreachable", "embedded_appserver_url"]


class RuntimeUnreachable(Exception):
    """No embedded AppServer to be had at a data dir; the message says why, in one line.
    `running` is False when no lineup runs there at all."""

    def __init__(self, message: str, *, running: bool) -> None:
        super().__init__(message)
        self.running = running


def embedded_appserver_url(data_dir: Path) -> str:
    """The URL of the embedded AppServer of the `lineup run` on `data_dir`. Raises
    RuntimeUnreachable: nothing runs there, it did not answer, or it has no embedded AppServer
    (it talks to a real one)."""
    # Imported here: only this path needs the runtime's control client.
    from lineup.actors.kernel import LineUpError
    from lineup.actors.kernel.control import StatusReply, StatusRequest
    from lineup.supervisor._control import NotRunning, control_request

    try:
        reply = control_request(data_dir, StatusRequest(), StatusReply)
    except NotRunning:
        raise RuntimeUnreachable(
            f"no lineup runs with data dir {data_dir}", running=False
        ) from None
    except LineUpError as exc:
        raise RuntimeUnreachable(
            f"the lineup at {data_dir} did not answer ({exc.code.value})", running=True
        ) from None
    url = reply.info.get("appserver_url")
    if not url:
        raise RuntimeUnreachable(
            f"the lineup at {data_dir} has no embedded AppServer: give --appserver", running=True
        )
    return url
