"""The Remote Agent side of the AppServer protocol: a client, a console and a demo agent.

`AgentClient` speaks DESIGN §12's agent half; `DemoAgent` / `DemoAgentActor` greet and echo;
`lineup agent` (`lineup.ops.agent.console.main`) plays the agent by hand or from a script.
"""

from __future__ import annotations

from ._client import UNREACHABLE, AgentClient, AppServerError
from .demo import GREETING, DemoAgent, DemoAgentActor

__all__ = [
    "GREETING",
    "UNREACHABLE",
    "AgentClient",
    "AppServerError",
    "DemoAgent",
    "DemoAgentActor",
]
