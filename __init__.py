"""LineUp: the on-device runtime for AI-agent MiniApps."""

__all__ = ["__version__"]

__version__ = "0.1.0"
