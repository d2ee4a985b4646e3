"""Stores by URL: `memory://` (in-process). SQLite and Redis backends follow the same interface."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from ._base import DEFAULT_TTL_SECONDS, ReasoningStore
from .memory import MemoryStore


def store_from_url(url: str) -> ReasoningStore:
    """A store for `url`. `memory://?max_records=N&ttl=SECONDS` is the only scheme so far."""
    parsed = urlparse(url)
    options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    if parsed.scheme == "memory":
        return MemoryStore(
            max_records=int(options.get("max_records", 50_000)),
            ttl_seconds=float(options.get("ttl", DEFAULT_TTL_SECONDS)),
        )
    raise ValueError(f"unsupported reasoning store URL {url!r}; supported: memory://")


__all__ = ["MemoryStore", "ReasoningStore", "store_from_url"]
