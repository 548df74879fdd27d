"""`python -m lineup.ops.mcp`: the same as `lineup mcp`."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
