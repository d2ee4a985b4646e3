"""Token counts of reasoning remembered across requests (`TokenMemo`): a conversation's
records are counted once, not on every request."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..core.limits import TokenCounter, estimate_tokens
from ..core.reasoning import Reasoning


class TokenMemo:
    """Token counts remembered per object that stands for one reasoning value (the callback
    uses each message's render recipe, reused while its reasoning is the same value), so a
    conversation's records are counted once, not on every request.

    Keyed by identity and holding each object it remembers, so an id cannot be reused while
    its count is remembered. Bounded (oldest out first): what it holds beyond the prefix cache
    (which holds the same recipes while it remembers their conversation) stays small. Lookups
    take no lock; writes do, and always leave the two dicts such that a remembered id names a
    live object. Assumes the counter depends only on the record's value.
    """

    def __init__(self, count: TokenCounter = estimate_tokens, *, max_entries: int = 4096) -> None:
        self.count = count
        self.max_entries = max_entries
        self._tokens: dict[int, int] = {}
        self._held: dict[int, object] = {}
        self._lock = threading.Lock()

    def bind(
        self,
        keys: Sequence[object | None] | None,
        reasoning_at: Callable[[int], Reasoning | None],
    ) -> MemoCounts:
        """`TokenCounts` of `reasoning_at(index)`; `keys[index]` stands for that reasoning
        (None, or no `keys`: counted every time)."""
        return MemoCounts(self, keys, reasoning_at)

    def _remember(self, key: object, tokens: int) -> None:
        with self._lock:
            self._held[id(key)] = key  # held before its count is visible
            self._tokens[id(key)] = tokens
            if len(self._tokens) > self.max_entries:
                # The oldest quarter at once: one scan (deleted slots make each `next(iter())`
                # slower), and in place, so a reader never sees an id whose object is gone.
                for oldest in list(itertools.islice(self._tokens, self.max_entries // 4 + 1)):
                    del self._tokens[oldest]  # the count goes before the object is let go
                    del self._held[oldest]

    def __len__(self) -> int:
        return len(self._tokens)


class MemoCounts:
    """`TokenCounts` through a `TokenMemo` (see `TokenMemo.bind`)."""

    def __init__(
        self,
        memo: TokenMemo,
        keys: Sequence[object | None] | None,
        reasoning_at: Callable[[int], Reasoning | None],
    ) -> None:
        self.memo = memo
        self.keys = keys
        self.reasoning_at = reasoning_at

    def total(self, indices: Sequence[int]) -> int:
        # Not one optimistic `sum` that fails on a miss: in an agent loop the newest message
        # always misses, and it comes last.
        return sum(self.counts(indices))

    def counts(self, indices: Sequence[int]) -> list[int]:
        memo, keys = self.memo, self.keys
        if keys is None:
            count, reasoning_at = memo.count, self.reasoning_at
            return [count(r) if (r := reasoning_at(i)) is not None else 0 for i in indices]
        # The lookups and the scan for what is not remembered yet run in C: in an agent loop
        # only the newest message or two are new.
        tokens = memo._tokens
        counts: list[int | None] = list(map(tokens.get, map(id, map(keys.__getitem__, indices))))
        for position in _positions(counts, None) if None in counts else ():
            index = indices[position]
            key = keys[index]
            remembered = tokens.get(id(key)) if key is not None else None
            if remembered is None:
                reasoning = self.reasoning_at(index)
                remembered = memo.count(reasoning) if reasoning is not None else 0
                if key is not None and reasoning is not None:
                    memo._remember(key, remembered)
            counts[position] = remembered
        return counts  # type: ignore[return-value]  # no None left


def _positions(values: list[Any], value: Any) -> Iterator[int]:
    """Where `value` is in `values` (scanned in C)."""
    position = -1
    try:
        while True:
            position = values.index(value, position + 1)
            yield position
    except ValueError:
        return
