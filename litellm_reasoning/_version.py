"""The release (one place: the package, the wheel's metadata and the startup line read it)."""

__version__ = "0.4.0"
