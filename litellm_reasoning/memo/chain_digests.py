"""The prefix memo of the conversation formats without one of their own (block messages,
input items): what the last requests of each scope's conversations hashed to, so a request
hashes only the items its conversation's previous request did not have.

A format's identity is a chain: the digest before item `i + 1` is `step(digest before i,
item i)`. Items are compared as the same plain data: the same value with the same types and
key order, so the format's shape of the item, and with an equal digest before it the digest
after it, are the ones the earlier request computed. With the accelerator, side by side with
private copies of the earlier request's items (`exact_prefix`, in C: a request repeating a
long conversation reads each item once and encodes only its new ones); without it, by their
`marshal` bytes (C, about a third of `json.dumps`). Anything else is stepped as without the
memo, and a step later on may match again (a client that moves its `cache_control` markers
changes two messages of a request, not the identity of the rest): what a request gets is
exactly what the walk without the memo computes (tests/core/test_chain_digests.py).

Bounded: `per_scope` conversations per scope (a worker behind a busy key serves many agents),
the least recently remembered conversation first out once the bytes held pass `max_bytes` (an
item's bytes and its bookkeeping), and past `max_conversations` in all (many short
conversations: a gateway's many end users). No LiteLLM, no I/O; safe to share between
threads.
"""

from __future__ import annotations

import marshal
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter
from typing import Any

from ..accelerator import NATIVE
from .continuation import best_earlier

Step = Callable[[str, Any], str]
"""`step(digest before an item, item)`: the digest after it (a format's identity)."""

_ENCODED = attrgetter("encoded")
"""A remembered walk's encoded items."""

_MARSHAL_VERSION = 2
"""The last format without back-references: later ones write one where an object is referred
to more than once (a matter of reference counts), so an equal copy would encode otherwise."""


@dataclass(slots=True, eq=False)  # compared by identity
class ChainWalk:
    """One request's items as its format's steps see them; remembered after the request."""

    scope: str
    encoded: list[Any]
    """Each item as compared: its `marshal` bytes (None: not plain data, equal to nothing),
    or with the accelerator its private copy (`_UNEQUAL`: not plain data)."""
    digests: list[str]
    """`digests[i]`: before item `i`; `digests[len]`: of all of it."""
    facts: list[Any]
    """The format's facts of each item (`facts_of`; empty without one)."""
    salt: str
    """What the keys depend on beside the scope and the items (a request's system prompt)."""
    keys: dict[int, str]
    """Item index -> store key: those of the items all equal to the earlier request's, reused
    from it (same salt); the request adds the keys it makes."""
    size: int = 0
    sizes: list[int] | None = None
    """The estimated bytes of the items through each one (cumulative), where the accelerator
    keeps copies (what a request reusing the first items counts for them)."""
    continues: ChainWalk | None = None
    """The remembered walk this one continues (most of it equal): replaced by it once
    remembered. Cleared then, so remembered walks hold no chain of earlier ones."""


def _encoded(item: Any) -> bytes | None:
    try:
        return marshal.dumps(item, _MARSHAL_VERSION)
    except (ValueError, RecursionError):
        return None


class ChainDigests:
    """Chained digests (and per-item facts, and keys) of one conversation format, remembered
    per scope. `facts_of` returns immutable values in no reference cycle (`blocks.BlockFacts`,
    a named tuple of flags and numbers): remembered, they are off the collector's lists."""

    def __init__(
        self,
        step: Step,
        empty: str,
        facts_of: Callable[[Any], Any] | None = None,
        *,
        max_bytes: int = 32 * 1024 * 1024,
        per_scope: int = 64,
        max_conversations: int = 2048,
    ) -> None:
        self.step, self.empty, self.facts_of = step, empty, facts_of
        self.max_bytes, self.per_scope = max_bytes, per_scope
        self.max_conversations = max_conversations
        self._count = 0
        self._scopes: dict[str, list[ChainWalk]] = {}
        """Each scope's conversations, most recently remembered first."""
        self._recency: OrderedDict[int, tuple[str, ChainWalk]] = OrderedDict()
        """Every remembered conversation by `id`, least recently remembered first: over a cap
        the oldest goes, whichever scope holds it."""
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        """The bytes of the items remembered (their `marshal` bytes)."""
        return self._bytes

    @property
    def conversations(self) -> int:
        """How many conversations are remembered, all scopes together."""
        return self._count

    def digests(self, scope: str, items: Sequence[Any]) -> list[str]:
        """`out[i]`: the digest before `items[i]`; `out[len(items)]`: of all of them."""
        walked = self.walk(scope, items)
        self.remember(walked)
        return walked.digests

    def walk(self, scope: str, items: Sequence[Any], salt: str = "") -> ChainWalk:
        """`items` stepped, reusing what an earlier request of `scope` computed (not
        remembered until `remember`, once the request has added its keys)."""
        with self._lock:
            candidates = list(self._scopes.get(scope, ()))
        if NATIVE is not None and type(items) is list:
            return self._walk_copies(scope, items, salt, candidates)
        encoded = [_encoded(item) for item in items]
        earlier, same = best_earlier(encoded, candidates, _ENCODED, _equal_start)
        out = [self.empty]
        facts_of, step = self.facts_of, self.step
        facts: list[Any] = []
        keys: dict[int, str] = {}
        if earlier is None:
            for item in items:
                out.append(step(out[-1], item))
            if facts_of is not None:
                facts = [facts_of(item) for item in items]
        else:
            out += earlier.digests[1 : same + 1]
            if facts_of is not None:
                facts = earlier.facts[:same]
            if earlier.salt == salt:
                keys = {i: key for i, key in earlier.keys.items() if i < same}
            before, known, limit = earlier.digests, earlier.encoded, len(earlier.encoded)
            for i in range(same, len(items)):
                code = encoded[i]
                equal = i < limit and code is not None and code == known[i]
                if equal and out[i] == before[i]:
                    out.append(before[i + 1])
                else:
                    out.append(step(out[i], items[i]))
                if facts_of is not None:
                    facts.append(earlier.facts[i] if equal else facts_of(items[i]))
        size = sum(len(code or b"") for code in encoded) + _ITEM_OVERHEAD * len(encoded)
        # A request that only shares a beginning with a remembered conversation is remembered
        # beside it.
        continues = earlier if earlier is not None and 2 * same >= len(earlier.encoded) else None
        if NATIVE is not None:
            # Bytes, digests and facts, never a container that refers back to the lists: off
            # the collector, which would walk every item of them at each collection during the
            # request and, once remembered, at every full one.
            NATIVE.untrack([encoded, out, facts])
        return ChainWalk(scope, encoded, out, facts, salt, keys, size, None, continues)

    def _walk_copies(
        self, scope: str, items: list[Any], salt: str, candidates: list[ChainWalk]
    ) -> ChainWalk:
        """`walk` with the accelerator: the items compared with the earlier request's copies
        in C (`exact_prefix`), only the items after them stepped, encoded and copied."""
        assert NATIVE is not None
        exact = NATIVE.exact_prefix
        earlier, same = best_earlier(items, candidates, _ENCODED, _exact_start)
        if earlier is not None and earlier.sizes is None:  # walked without the accelerator
            earlier, same = None, 0
        out = [self.empty]
        facts_of, step = self.facts_of, self.step
        facts: list[Any] = []
        keys: dict[int, str] = {}
        copies: list[Any] = []
        sizes: list[int] = []
        total = 0
        known: list[Any] = []
        if earlier is not None:
            assert earlier.sizes is not None
            out += earlier.digests[1 : same + 1]
            copies = earlier.encoded[:same]
            sizes = earlier.sizes[:same]
            total = sizes[-1] if same else 0
            if facts_of is not None:
                facts = earlier.facts[:same]
            if earlier.salt == salt:
                keys = {i: key for i, key in earlier.keys.items() if i < same}
            known = earlier.encoded
        before = earlier.digests if earlier is not None else []
        # Items the earlier request also had one at the same place: each may be equal again (a
        # client that moves its cache markers changes two, not the rest).
        beside = max(same, min(len(known), len(items)))
        for i in range(same, beside):
            item = items[i]
            equal = exact([item], [known[i]], 1) == 1  # `_UNEQUAL`: never
            if equal:
                assert earlier is not None and earlier.sizes is not None
                copies.append(known[i])
                total += earlier.sizes[i] - (earlier.sizes[i - 1] if i else 0)
            else:
                copies.append(_copy_of(item))
                total += len(_encoded(item) or b"") + _COPIED_ITEM_OVERHEAD
            sizes.append(total)
            if equal and out[i] == before[i]:
                out.append(before[i + 1])
            else:
                out.append(step(out[i], item))
            if facts_of is not None:
                facts.append(earlier.facts[i] if equal and earlier is not None else facts_of(item))
        # Items after all the earlier request had: new, in one pass each.
        rest = items[beside:]
        if rest:
            fresh = NATIVE.copy(rest)
            copies += fresh if fresh is not None else map(_copy_of, rest)
            for item in rest:
                out.append(step(out[-1], item))
            if facts_of is not None:
                facts += map(facts_of, rest)
            encoded_sizes = (len(_encoded(item) or b"") + _COPIED_ITEM_OVERHEAD for item in rest)
            sizes += accumulate(encoded_sizes, initial=total)
            del sizes[beside]  # `initial` itself: the total before them
            total = sizes[-1]
        continues = earlier if earlier is not None and 2 * same >= len(earlier.encoded) else None
        NATIVE.untrack([copies, out, facts, sizes])
        return ChainWalk(scope, copies, out, facts, salt, keys, total, sizes, continues)

    def remember(self, walked: ChainWalk) -> None:
        """Keep `walked` for the next requests of its scope."""
        replaces, walked.continues = walked.continues, None
        # Its own copy: the request's dict may still get keys after this (never read here).
        walked.keys = dict(walked.keys)
        if NATIVE is not None:
            # Long-lived (a busy key's conversations: tens of thousands of items), and the
            # collector keeps a named tuple tracked however atomic what it holds is.
            NATIVE.untrack(walked.facts)
        with self._lock:
            held = self._scopes.pop(walked.scope, [])
            if replaces is not None and replaces in held:
                held.remove(replaces)
                self._forgot(replaces)
            held.insert(0, walked)
            self._bytes += walked.size
            self._count += 1
            self._recency[id(walked)] = (walked.scope, walked)
            while len(held) > self.per_scope:
                self._forgot(held.pop())
            self._scopes[walked.scope] = held
            while (self._bytes > self.max_bytes or self._count > self.max_conversations) and (
                self._recency
            ):
                scope, oldest = next(iter(self._recency.values()))
                in_scope = self._scopes[scope]
                in_scope.remove(oldest)  # by identity (`eq=False`)
                self._forgot(oldest)
                if not in_scope:
                    del self._scopes[scope]

    def _forgot(self, walked: ChainWalk) -> None:
        self._bytes -= walked.size
        self._count -= 1
        del self._recency[id(walked)]


_ITEM_OVERHEAD = 240
"""Estimated bytes an item costs beside its `marshal` bytes: its bytes object, its digest and
its facts (`sys.getsizeof` of those of a tool-use message: 226 bytes)."""

_COPIED_ITEM_OVERHEAD = 800
"""The same where the accelerator keeps a copy instead of the bytes (the copy's containers: 588
bytes per message of a Claude Code session; its text is counted by the bytes' length)."""


_UNEQUAL = object()
"""The copy kept of an item that cannot be copied (not plain data): the same as no item."""


def _copy_of(item: Any) -> Any:
    """The accelerator's private copy of `item`; `_UNEQUAL` where it is not plain data."""
    assert NATIVE is not None
    copied = NATIVE.copy([item])
    return copied[0] if copied is not None else _UNEQUAL


def _exact_start(items: list[Any], copies: list[Any]) -> int:
    """How many leading items are the same plain data as the copies (in C)."""
    assert NATIVE is not None
    return NATIVE.exact_prefix(items, copies, min(len(items), len(copies)))


def _equal_start(encoded: list[bytes | None], known: list[bytes | None]) -> int:
    """How many leading items are equal (None, not plain data, equals nothing)."""
    limit = min(len(encoded), len(known))
    for i in range(limit):
        code = encoded[i]
        if code is None or code != known[i]:
            return i
    return limit
