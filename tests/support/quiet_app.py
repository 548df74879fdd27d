"""A MiniApp that does nothing but run: no tools, no peers asked at its start, so a test of the
supervisor can start, stop and kill its process with no other actor of the runtime around."""

from __future__ import annotations

from lineup.sdk import AppInfo, MiniApp


class Quiet(MiniApp):
    app_info = AppInfo(app_scope="quiet", version="1.0.0", kind="bundled-reference")
