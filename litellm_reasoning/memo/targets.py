"""Resolved targets, remembered per deployment and request shape."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any


class TargetCache:
    """Resolved targets by what they were resolved from (a deployment's names, api_base and
    the request flags), so a deployment's target is worked out once, not on every request:
    resolution reads only those inputs and the table. Bounded (cleared when full); safe to
    share between threads (single dict operations)."""

    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._resolved: dict[Hashable, Any] = {}

    def get(self, key: Hashable) -> Any:
        """What was put under `key`, or None."""
        return self._resolved.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        if len(self._resolved) >= self.max_entries:
            self._resolved.clear()
        self._resolved[key] = value
