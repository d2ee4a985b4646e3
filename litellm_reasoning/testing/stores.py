"""Store doubles for tests, real `MemoryStore`s: one that lists what the callback put into it
(tests assert on the records a capture made, in order, without reaching into the store), and
one that fails on purpose the ways a backend fails."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

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


class FaultyStore(SpyStore):
    """A real in-memory store (a `SpyStore`) that fails on purpose, the ways a backend fails.

    `fault` (settable between calls): `"down"` makes every read and write raise
    `ConnectionError(message)` (an outage), `"reads down"` only the reads, and `"garbage"` makes
    reads hand back values that are not records (what rendering must survive); `""` is healthy.
    `fail_at=i` fails only the i-th async read or write (0-based, counted together in `calls`):
    by raising `ConnectionError` (`kind="raise"`), or by hanging `delay` seconds and then raising
    `TimeoutError` (`kind="timeout"`, what a backend's socket timeout does)."""

    def __init__(
        self,
        *,
        fault: str = "",
        message: str = "store unreachable",
        fail_at: int | None = None,
        kind: str = "raise",
        delay: float = 0.25,
    ) -> None:
        super().__init__()
        self.fault, self.message = fault, message
        self.fail_at, self.kind, self.delay = fail_at, kind, delay
        self.calls = 0

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        found = super().get_many(scope, keys)
        if self.fault in ("down", "reads down"):
            raise ConnectionError(self.message)
        if self.fault == "garbage":
            return dict.fromkeys(found, "not a record")  # type: ignore[arg-type]
        return found

    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        if self.fault == "down":
            raise ConnectionError(self.message)
        super().put_many(scope, records)

    async def _counted(self) -> None:
        index, self.calls = self.calls, self.calls + 1
        if index != self.fail_at:
            return
        if self.kind == "timeout":
            await asyncio.sleep(self.delay)
            raise TimeoutError(f"{self.message}: timed out (injected)")
        raise ConnectionError(f"{self.message} (injected)")

    async def aget_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        await self._counted()
        return self.get_many(scope, keys)

    async def aput_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        await self._counted()
        self.put_many(scope, records)


__all__ = ["FaultyStore", "SpyStore"]
