"""What MiniApp authors import (DESIGN §6). Filled in by the SDK issue."""

__all__: list[str] = []
