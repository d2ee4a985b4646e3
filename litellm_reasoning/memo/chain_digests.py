"""The prefix memo of the conversation formats without one of their own (block messages,
input items): what the last requests of each scope's conversations hashed to, so a request
hashes only the items its conversation's previous request did not have.

A format's identity is a chain: the digest before item `i + 1` is `step(digest before i,
item i)`. Items are compared by their `marshal` bytes (C, about a third of `json.dumps`):
equal bytes are the same value with the same types and key order, so the format's shape of
the item, and with an equal digest before it the digest after it, are the ones the earlier
request computed. Anything else is stepped as without the memo, and a step later on may match
again (a client that moves its `cache_control` markers changes two messages of a request, not
the identity of the rest): what a request gets is exactly what the walk without the memo
computes (tests/core/test_prefix_cache.py).

Bounded: a few conversations per scope, scopes least recently used first out once the bytes
held pass `max_bytes`. No LiteLLM, no I/O; safe to share between threads.
"""

from __future__ import annotations

import marshal
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Step = Callable[[str, Any], str]
"""`step(digest before an item, item)`: the digest after it (a format's identity)."""


@dataclass(slots=True)
class _Walked:
    encoded: list[bytes | None]
    """Each item's `marshal` bytes (None: not plain data, equal to nothing)."""
    digests: list[str]
    """`digests[i]`: before item `i`; `digests[len]`: of all of it."""
    size: int


_MARSHAL_VERSION = 2
"""The last format without back-references: later ones write one where an object is referred
to more than once (a matter of reference counts), so an equal copy would encode otherwise."""


def _encoded(item: Any) -> bytes | None:
    try:
        return marshal.dumps(item, _MARSHAL_VERSION)
    except (ValueError, RecursionError):
        return None


class ChainDigests:
    """Chained digests of one conversation format, remembered per scope."""

    def __init__(
        self, step: Step, empty: str, *, max_bytes: int = 32 * 1024 * 1024, per_scope: int = 4
    ) -> None:
        self.step, self.empty = step, empty
        self.max_bytes, self.per_scope = max_bytes, per_scope
        self._scopes: OrderedDict[str, list[_Walked]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        """The bytes of the items remembered (their `marshal` bytes)."""
        return self._bytes

    @property
    def conversations(self) -> int:
        """How many conversations are remembered, all scopes together."""
        with self._lock:
            return sum(map(len, self._scopes.values()))

    def digests(self, scope: str, items: Sequence[Any]) -> list[str]:
        """`out[i]`: the digest before `items[i]`; `out[len(items)]`: of all of them."""
        encoded = [_encoded(item) for item in items]
        with self._lock:
            candidates = list(self._scopes.get(scope, ()))
        earlier, same = None, 0
        for candidate in candidates:
            matched = _equal_start(encoded, candidate.encoded)
            if matched > same:
                earlier, same = candidate, matched
        out = [self.empty]
        step = self.step
        if earlier is None:
            for item in items:
                out.append(step(out[-1], item))
        else:
            out += earlier.digests[1 : same + 1]
            before, known, limit = earlier.digests, earlier.encoded, len(earlier.encoded)
            for i in range(same, len(items)):
                code = encoded[i]
                if i < limit and code is not None and code == known[i] and out[i] == before[i]:
                    out.append(before[i + 1])
                else:
                    out.append(step(out[i], items[i]))
        # The request replaces the conversation it continues (most of it equal); one that
        # only shares a beginning with it is remembered beside it.
        replaces = earlier if earlier is not None and 2 * same >= len(earlier.encoded) else None
        self._remember(scope, _Walked(encoded, out, sum(len(c or b"") for c in encoded)), replaces)
        return out

    def _remember(self, scope: str, walked: _Walked, replaces: _Walked | None) -> None:
        with self._lock:
            held = self._scopes.pop(scope, [])
            if replaces is not None and replaces in held:
                held.remove(replaces)
                self._bytes -= replaces.size
            held.insert(0, walked)
            self._bytes += walked.size
            while len(held) > self.per_scope:
                self._bytes -= held.pop().size
            self._scopes[scope] = held
            while self._bytes > self.max_bytes and self._scopes:
                _, dropped = self._scopes.popitem(last=False)
                self._bytes -= sum(w.size for w in dropped)


def _equal_start(encoded: list[bytes | None], known: list[bytes | None]) -> int:
    """How many leading items are equal (None, not plain data, equals nothing)."""
    limit = min(len(encoded), len(known))
    for i in range(limit):
        code = encoded[i]
        if code is None or code != known[i]:
            return i
    return limit
