"""`python -m lineup.ops.agent`: the same as `lineup agent`."""

from __future__ import annotations

import sys

from .console import main

sys.exit(main())
