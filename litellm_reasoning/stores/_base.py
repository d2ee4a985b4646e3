"""The store interface: a mapping from (tenant scope, message key) to a reasoning record.

The sync methods are the contract; the async twins default to a thread hop so a blocking
backend never stalls the event loop, and backends with native async override them.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from ..types import Reasoning

DEFAULT_TTL_SECONDS = 24 * 3600
"""Long enough for a working day's agent session, short enough that nothing lingers."""
DEFAULT_MAX_RECORD_BYTES = 2 * 1024 * 1024
"""A record larger than this (reasoning text plus opaque data) is not kept."""


def record_size(record: Reasoning) -> int:
    """Approximate bytes a record holds (what the caps count)."""
    return sum(
        len(part.text) + len(part.signature or "") + len(part.data or "") for part in record.parts
    )


class ReasoningStore(ABC):
    """Where captured reasoning waits for the next request of its conversation."""

    @abstractmethod
    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        """The records of `scope` found under `keys` (missing and expired keys are absent)."""

    @abstractmethod
    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        """Keep `records` under `scope`, replacing any record under the same key."""

    async def aget_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return await asyncio.to_thread(self.get_many, scope, keys)

    async def aput_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        await asyncio.to_thread(self.put_many, scope, records)

    def close(self) -> None:  # noqa: B027 - optional for backends without resources
        """Release connections and files."""

    def __enter__(self) -> ReasoningStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
