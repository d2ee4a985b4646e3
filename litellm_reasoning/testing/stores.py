"""Store doubles for tests: a real `MemoryStore` that also lists what the callback put into it
(tests assert on the records a capture made, in order, without reaching into the store)."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.reasoning import Reasoning
from ..stores.memory import MemoryStore


class SpyStore(MemoryStore):
    """A `MemoryStore` whose `records` lists every record put into it, in order (sync and
    async writes alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[Reasoning] = []

    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        self.records.extend(records.values())
        super().put_many(scope, records)

    async def aput_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        self.put_many(scope, records)


__all__ = ["SpyStore"]
