"""What the last requests of each scope's conversations hashed to, so a request only
canonicalises and hashes the messages its conversation's previous request did not have.

Every request of an agent loop resends the whole history plus a message or two. Its message
dicts are new objects each time (LiteLLM copies them, the proxy parses JSON), so they are
compared by value with private copies of the earlier request's messages: dict equality runs in C
and costs a small fraction of canonical JSON plus blake2b. Where equality does not decide the
canonical bytes (see `identity.equality_decides`) those bytes are recomputed and compared.

For a message found equal, the earlier request's results are reused exactly: its canonical
bytes, its digest (while every message before it matched too), its store key, the reasoning it
carries and how it was rendered (`render.Recipe`). Everything else is computed as without the
cache, so what a request gets is what the uncached path computes (tests/test_prefix_cache.py).

Bounded: `per_scope` conversations per scope (a worker behind a busy key serves many agents),
the least recently remembered conversation first out once the estimated size passes
`max_bytes` or their count `max_histories`. Pure (no LiteLLM, no I/O); safe to share between
threads.
"""

from __future__ import annotations

import marshal
import operator
import threading
from bisect import bisect_left
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import attrgetter
from typing import Any

from ..accelerator import NATIVE
from ..core import identity
from ..core.dialect import Dialect
from ..core.extract import carries_nothing
from ..core.identity import FACT_CALL_EXTRAS, FACT_TURN
from ..core.policy import TurnPolicy
from ..core.reasoning import Reasoning
from ..core.render import Recipe, Replay, _own
from ..core.turns import carries_turn
from .continuation import best_earlier, equal

REPLAY: Replay | None = NATIVE.replay if NATIVE is not None else None
"""The accelerator's loop over the assistant messages whose remembered recipe (`History.recipes`)
holds as it is, for `core.render.render`; None without the accelerator."""

_COPIES = attrgetter("copies")
"""A remembered history's copies of its messages."""

_UNEQUAL = object()
"""The copy kept of a message that cannot be copied (not JSON): equal to no message."""

_OVERHEAD = 256
"""Estimated bytes per remembered message besides its JSON and canonical bytes."""


@dataclass(slots=True)
class History:
    """One request's messages as identity and render see them; remembered after the request."""

    scope: str
    messages: Sequence[Any]
    copies: list[Any]
    """Private copies of `messages`, compared with the next request's."""
    shapes: list[bytes]
    """`identity.canonical` of each message."""
    digests: list[str]
    """`identity.prefix_digests(messages)`."""
    keys: list[str | None]
    """Store key of each message, filled in when first asked for."""
    owns: list[Reasoning | None]
    """`render.own_reasonings(messages)`."""
    recipes: list[Recipe | None]
    """How each assistant message was last rendered (filled in by `render`)."""
    assistant: list[int]
    """`render.assistant_indices(messages)`."""
    flagged: list[int]
    """Indices of the dicts carrying `turn`."""
    unsure: list[int]
    """Indices where equality does not decide the canonical bytes."""
    detailed: list[int]
    """Indices whose reasoning holds provider dicts (read again each request)."""
    sizes: list[int]
    """Estimated bytes of each remembered message, cumulative."""
    reused: int = 0
    """How many leading messages were found equal to the earlier request's."""
    users: list[int] = field(default_factory=list)
    """Indices of the user message dicts (what tool-call keys are anchored to, and where the
    turn rule looks: `turns.current_turn_start`'s `among`)."""
    legacy: list[tuple[str, ...] | None] = field(default_factory=list)
    """Earlier releases' keys of each message (`identity.previous_tool_call_keys`), filled in
    when first asked for (empty: none)."""
    system: str | None = None
    """`identity.system_digest` of the conversation's system prompt, once asked for."""
    bare: list[bool] = field(default_factory=list)
    """Per message: an assistant message no field of which can hold reasoning
    (`extract.carries_nothing`, known from the walk; False: not known, asked again)."""
    held: list[int] = field(default_factory=list)
    """Cumulative bytes of the reasoning the recipes of `assistant[: len(held)]` hold (restored
    records among it): counted when the history is remembered."""
    planned: Planned | None = None
    """The plan the last request of this history was given for its messages (kept while
    they are all equal), for the next request to extend."""
    _counted: int = field(default=0, repr=False)
    """The bytes `PrefixCache.remember` counted for it (what `_forget` takes back)."""
    _remembered: bool = field(default=False, repr=False)

    def lists(self) -> list[Any]:
        """Every list of the history's facts, for the accelerator to take off the garbage
        collector's lists (`PrefixCache._extend`): they hold text, numbers, records, recipes
        and untracked copies, never a container that refers back to them, and are only ever
        extended in place. Tracked, the 15 lists of a 1,000-message history (~10,000
        references, most of them to objects last touched a request ago) were walked by every
        young collection that fell inside the request (the callback's own allocations trigger
        most of them) and by every full collection while the history is remembered."""
        return [
            self.copies,
            self.shapes,
            self.digests,
            self.keys,
            self.owns,
            self.recipes,
            self.assistant,
            self.flagged,
            self.unsure,
            self.detailed,
            self.sizes,
            self.users,
            self.legacy,
            self.bare,
            self.held,
        ]

    def keys_for(self, indices: Sequence[int]) -> dict[int, str]:
        """`{index: self.key(index)}` for `indices`."""
        # In C but for the keys not made yet (an agent loop's newest messages, all of a cold
        # request's: made in one batch).
        found = list(map(self.keys.__getitem__, indices))
        if found.count(None) == len(found) and type(indices) is list:  # a cold request's: all
            return dict(zip(indices, self._make_keys(indices), strict=True))
        if None in found:
            missing = [index for index, key in zip(indices, found, strict=True) if key is None]
            made = dict(zip(missing, self._make_keys(missing), strict=True))
            found = [
                made[index] if key is None else key
                for index, key in zip(indices, found, strict=True)
            ]
        return dict(zip(indices, found, strict=True))  # type: ignore[arg-type]  # no None left

    def key(self, index: int) -> str:
        """The store key of the message at `index` (`identity.message_key`)."""
        key = self.keys[index]
        if key is None:
            key = self._make_keys([index])[0]
        return key

    def _make_keys(self, indices: Sequence[int]) -> list[str]:
        """`identity.message_key` of the messages at `indices` (ascending), kept in `keys`:
        the scope's and the system prompt's part of the key material made once."""
        system = self.system_digest()
        messages, shapes, digests = self.messages, self.shapes, self.digests
        made: list[str | None] = (
            NATIVE.keys(
                messages,
                list(indices),
                shapes,
                digests,
                self.users,
                *identity.key_material(self.scope, system),
            )
            if NATIVE is not None and type(messages) is list
            else [None] * len(indices)
        )
        if None in made:  # all of them without the accelerator; the shapes it leaves to Python
            tool_call_key, position_key = identity.key_makers(self.scope, system)
            for position, index in enumerate(indices):
                if made[position] is not None:
                    continue
                if identity.has_tool_call_ids(messages[index]):
                    user, offset, _ = self.anchor(index)
                    made[position] = tool_call_key(shapes[index], offset, user)
                else:
                    made[position] = position_key(digests[index])
        deque(map(self.keys.__setitem__, indices, made), maxlen=0)  # kept, in C
        return made  # type: ignore[return-value]  # no None left

    def anchor(self, index: int) -> identity.Anchor:
        """Where the message at `index` stands in its turn (`identity.anchor_of`)."""
        system = self.system_digest()
        position = bisect_left(self.users, index) - 1
        if position < 0:
            return identity.anchor_at(index, None, system=system)
        user = self.users[position]
        return identity.anchor_at(index, user, self.shapes[user], system)

    def system_digest(self) -> str:
        """`identity.system_digest` of the leading system and developer messages."""
        if self.system is None:
            source = self.messages or self.copies
            roles = (m.get("role") if isinstance(m, dict) else None for m in source)
            count = identity.leading_system_count(roles)
            self.system = self.digests[count - 1] if count else identity.EMPTY_DIGEST
        return self.system

    def legacy_keys_for(self, indices: Sequence[int]) -> dict[int, tuple[str, ...]]:
        """Earlier releases' keys of the tool-call messages among `indices` (also once the
        history is remembered: from the private copies)."""
        legacy = self.legacy
        if len(legacy) < len(self.shapes):
            legacy.extend([None] * (len(self.shapes) - len(legacy)))
        source = self.messages or self.copies
        out: dict[int, tuple[str, ...]] = {}
        for index in indices:
            keys = legacy[index]
            if keys is None:
                message = source[index]
                keys = legacy[index] = (
                    identity.previous_tool_call_keys(
                        self.scope, message, self.shapes[index], self.anchor(index)
                    )
                    if isinstance(message, dict)
                    else None
                ) or ()
            if keys:
                out[index] = keys
        return out

    @property
    def digest(self) -> str:
        """The digest of the whole history."""
        return self.digests[-1] if self.digests else identity.EMPTY_DIGEST

    @property
    def size(self) -> int:
        return self.sizes[-1] if self.sizes else 0

    def held_bytes(self) -> int:
        """What the recipes hold beyond the messages (`held`, brought up to date)."""
        held, recipes = self.held, self.recipes
        total = held[-1] if held else 0
        count = len(recipes)
        new = self.assistant[len(held) :]
        if new and new[-1] < count and not any(map(recipes.__getitem__, new)):
            # in C: no recipe of their own (messages rendered by their records' decisions, or
            # not rendered), nothing held
            held.extend(repeat(total, len(new)))
            return total
        for index in new:
            recipe = recipes[index] if index < count else None
            if recipe is not None:
                stored = recipe.from_store
                if stored is not None:
                    total += _reasoning_bytes(stored)
                sent = recipe.reasoning
                if sent is not stored and sent is not None:
                    total += _reasoning_bytes(sent)
            held.append(total)
        return total


def _reasoning_bytes(record: Reasoning) -> int:
    # Its characters are four per estimated token (worked out once per record), to 3 bytes.
    return record.estimated_tokens * 4 + _OVERHEAD * len(record.parts)


@dataclass(slots=True, frozen=True)
class Planned:
    """What a request's plan gave its first `count` messages (`ChatMessages.prepare`): which
    of them are looked up (`wanted`), under which keys, and the digest before each. It depends
    only on those messages, the dialect, the policy and where the turn starts, so it holds for
    a later request whose first `count` messages are equal, for the same three."""

    dialect: Dialect
    policy: TurnPolicy
    turn_start: int
    count: int
    wanted: list[int]
    keys: dict[int, str]
    before: dict[int, str]

    def holds_for(self, dialect: Dialect, policy: TurnPolicy, turn_start: int) -> bool:
        return dialect is self.dialect and policy is self.policy and turn_start == self.turn_start


_ASSISTANT, _USER = identity.FACT_ASSISTANT, identity.FACT_USER
_OWN_FIELDS = identity.FACT_OWN_FIELDS | FACT_CALL_EXTRAS
"""An assistant message that may carry reasoning (`extract.carries_nothing` is False)."""
_FLAGGED = identity.FACT_TURN_KEY | FACT_TURN
"""A message carrying `turn`, itself or on a block, call or function (`turns.carries_turn`)."""


def _facts_of(message: Any) -> int:
    """`identity.read`'s facts of a message it does not read (its own shape), asked of the
    message itself: a dict of a subclass too (an assistant message rendered, a user message
    anchoring, as `identity.key_at` and `render` see them)."""
    if not isinstance(message, dict):
        return 0
    role = message.get("role")
    facts = _FLAGGED if carries_turn(message) else 0
    if role == "assistant":
        return facts | _ASSISTANT | _OWN_FIELDS  # its reasoning read as it is
    return facts | _USER if role == "user" else facts


def _copy(message: Any) -> tuple[Any, int]:
    """A private copy of `message` for later comparison, and its size. `marshal` copies plain
    data in C, exactly (types kept), and refuses anything else."""
    if type(message) is not dict:
        return _UNEQUAL, 0
    try:
        data = marshal.dumps(message)
    except (ValueError, RecursionError):
        return _UNEQUAL, 0
    return marshal.loads(data), len(data)


def _copy_all(messages: Sequence[Any], start: int) -> tuple[list[Any] | None, int]:
    """Private copies of `messages[start:]` in one `marshal` round trip (a third of the cost
    of one per message), and their marshalled size. (None, 0) when one of them is not plain
    data: copied one by one then (`_copy`). The accelerator copies the containers and shares
    the immutable leaves instead (a fifth of what parsing cost); it refuses more than
    `marshal` does, so what it copies is plain data and no bytes are written: the size is
    then -1 (`_spread_sizes` takes the canonical bytes for it, within a tenth of marshal's)."""
    tail = messages[start:]
    if type(tail) is not list or set(map(type, tail)) - {dict}:
        return None, 0
    copies: list[Any] | None = NATIVE.copy(tail) if NATIVE is not None else None
    if copies is not None:
        return copies, -1
    try:
        data = marshal.dumps(tail)
    except (ValueError, RecursionError):
        return None, 0
    return marshal.loads(data), len(data)


def _spread_sizes(sizes: list[int], shapes: list[bytes], start: int, marshalled: int) -> None:
    """Cumulative size estimates of the messages from `start` on, copied in one batch of
    `marshalled` bytes (-1: not known, taken as their canonical bytes): the batch spread over
    them by their canonical bytes (the estimate bounds memory)."""
    total = sizes[-1] if sizes else 0
    if marshalled < 0 and NATIVE is not None:
        sizes.extend(NATIVE.sizes(shapes, start, total, _OVERHEAD))  # the same, in one call
        return
    lengths = list(map(len, shapes[start:]))
    # its canonical bytes + its copy's share
    weight = 2.0 if marshalled < 0 else 1 + marshalled / max(1, sum(lengths))
    # total + int(cumulative * weight) + count * _OVERHEAD, count from 1, in C iterators
    weighted = map(int, map(operator.mul, accumulate(lengths), repeat(weight)))
    overheads = range(total + _OVERHEAD, total + _OVERHEAD * (len(lengths) + 1), _OVERHEAD)
    sizes.extend(map(operator.add, weighted, overheads))


def _equal_prefix(messages: Sequence[Any], copies: list[Any]) -> int:
    """How many leading messages equal the copies (compared in C, in chunks)."""
    if type(messages) is not list:
        messages = list(messages)
    limit = min(len(messages), len(copies))
    if NATIVE is not None:
        try:  # side by side in C: every message up to the first unequal one
            return NATIVE.equal_prefix(messages, copies, limit)
        except Exception:  # an object whose `==` raises: nothing is reused
            return 0
    try:
        # In growing chunks from the start, not the whole prefix at once: another conversation
        # of the scope (a proxy worker holds several) differs within its first messages, and
        # is told apart by comparing a few, not by copying both histories for one comparison.
        start, step = 0, 32
        while start < limit:
            end = min(limit, start + step)
            if messages[start:end] != copies[start:end]:
                return next(i for i in range(start, end) if messages[i] != copies[i])
            start, step = end, step * 2
    except Exception:  # an object whose `==` raises: nothing is reused
        return 0
    return limit


def _mostly_equal(messages: Sequence[Any], copies: list[Any], start: int, end: int) -> bool:
    """Whether at least half of `messages[start:end]` equal the copies at the same places
    (compared in C): worth walking beside them (`_walk_beside`) rather than as new."""
    try:
        equal = sum(map(operator.eq, messages[start:end], copies[start:end]))
    except Exception:  # an object whose `==` raises: compared one by one, as before
        return True
    return bool(2 * equal >= end - start)


class PrefixCache:
    """Per-scope memory of recent conversations (see the module docstring)."""

    def __init__(
        self, *, max_bytes: int = 64 * 1024 * 1024, per_scope: int = 64, max_histories: int = 2048
    ) -> None:
        self.max_bytes = max_bytes
        self.per_scope = per_scope
        """Conversations kept per scope: a proxy worker serving many agents on one key holds
        each one's last request (beyond it, every request of that key is walked cold)."""
        self.max_histories = max_histories
        """A cap on conversations remembered across all scopes: the byte estimate undercounts
        Python's per-object overhead, which dominates for many short conversations (a gateway
        with many end users)."""
        self._count = 0
        self._scopes: dict[str, list[History]] = {}
        """Each scope's conversations, most recently remembered first."""
        self._recency: OrderedDict[int, tuple[str, History]] = OrderedDict()
        """Every remembered conversation by `id`, least recently remembered first: over a cap
        the oldest goes, whichever scope holds it (a busy key does not push another key's newer
        conversations out first)."""
        self._bytes = 0
        self._lock = threading.Lock()

    def walk(self, scope: str, messages: Sequence[Any]) -> History:
        """`messages` hashed, reusing what an earlier request of `scope` computed."""
        with self._lock:
            candidates = list(self._scopes.get(scope, ()))
        earlier, same = best_earlier(messages, candidates, _COPIES, _equal_prefix)
        if earlier is not None:
            for index in earlier.unsure:
                if index >= same:
                    break
                if identity.canonical(messages[index]) != earlier.shapes[index]:
                    same = index
                    break
        return self._extend(scope, messages, earlier, same)

    def _extend(
        self, scope: str, messages: Sequence[Any], earlier: History | None, same: int
    ) -> History:
        if earlier is None or same == 0:
            history = History(scope, messages, [], [], [], [], [], [], [], [], [], [], [])
        else:
            history = History(
                scope,
                messages,
                earlier.copies[:same],
                earlier.shapes[:same],
                earlier.digests[:same],
                earlier.keys[:same],
                earlier.owns[:same],
                earlier.recipes[:same],
                earlier.assistant[: bisect_left(earlier.assistant, same)],
                earlier.flagged[: bisect_left(earlier.flagged, same)],
                earlier.unsure[: bisect_left(earlier.unsure, same)],
                earlier.detailed[: bisect_left(earlier.detailed, same)],
                earlier.sizes[:same],
                reused=same,
            )
            history.users = earlier.users[: bisect_left(earlier.users, same)]
            history.bare = earlier.bare[:same]
            history.legacy = earlier.legacy[:same]
            history.held = earlier.held[: len(history.assistant)]
            if earlier.planned is not None and earlier.planned.count <= same:
                history.planned = earlier.planned
            for index in history.detailed:
                # Reasoning holding provider dicts is read again: no object of an earlier
                # request reaches this one's wire.
                history.owns[index] = _own(messages[index])
        if NATIVE is not None:
            NATIVE.untrack(history.lists())
        self._walk_rest(history, earlier, same)
        return history

    @staticmethod
    def _walk_rest(history: History, earlier: History | None, start: int) -> None:
        """Messages from `start` on. One equal to the earlier request's message at the same
        place (a refreshed system prompt shifts nothing) reuses its canonical bytes, reasoning
        and recipe; its digest and key too while every message before it matched."""
        messages = history.messages
        before = min(len(earlier.copies), len(messages)) if earlier is not None else start
        if earlier is not None and start < before:
            if _mostly_equal(messages, earlier.copies, start, before):
                PrefixCache._walk_beside(history, earlier, start, before)
            else:
                # Another conversation that only shares its head (a system prompt many
                # conversations of a key send): walked as new, in the batched path.
                before = start
        PrefixCache._walk_new(history, max(start, before))

    @staticmethod
    def _walk_beside(history: History, earlier: History, start: int, end: int) -> None:
        """Messages `start` to `end` (exclusive), which the earlier request also had a message
        at: reused where equal."""
        messages = history.messages
        previous = history.digest
        total = history.size
        unsure = set(earlier.unsure)
        chained = True
        for index in range(start, end):
            message = messages[index]
            reuse = index not in unsure and equal(message, earlier.copies[index])
            decided = True
            if reuse:
                shape = earlier.shapes[index]
                copy = earlier.copies[index]
                size = earlier.sizes[index] - (earlier.sizes[index - 1] if index else 0)
                own = earlier.owns[index]
                recipe = earlier.recipes[index]
                bare = earlier.bare[index]
            else:
                shape, decided = identity.canonical_decided(message)
                copy, size = _copy(message)
                size += len(shape) + _OVERHEAD
                own = None
                bare = False
                if isinstance(message, dict) and message.get("role") == "assistant":
                    own = _own(message)
                    bare = carries_nothing(message)
                recipe = None
            chained = chained and earlier.shapes[index] == shape
            if chained:
                previous = earlier.digests[index]
                history.keys.append(earlier.keys[index])
            else:
                previous = identity.chain(previous, shape)
                history.keys.append(None)
            history.copies.append(copy)
            history.shapes.append(shape)
            history.digests.append(previous)
            total += size
            history.sizes.append(total)
            history.owns.append(own)
            history.recipes.append(recipe)
            history.bare.append(bare)
            if isinstance(message, dict):
                if carries_turn(message):
                    history.flagged.append(index)
                role = message.get("role")
                if role == "user":
                    history.users.append(index)
                elif role == "assistant":
                    history.assistant.append(index)
                    if own is not None and any(part.details for part in own.parts):
                        history.detailed.append(index)
                        if reuse:
                            history.owns[index] = _own(message)
            if not decided:
                history.unsure.append(index)

    @staticmethod
    def _walk_new(history: History, start: int) -> None:
        """Messages from `start` on, which no earlier request had (all of a cold request):
        the per-message cost of a request on a process that never saw its conversation, so
        kept to one canonical encoding and one chained hash per message (in C where the
        accelerator is built), and one copy of them all (`_copy_all`)."""
        messages = history.messages
        new_copies, marshalled = _copy_all(messages, start)
        end = len(messages)
        if NATIVE is not None and new_copies is not None and type(messages) is list:
            index = start
            while index < end:
                index = PrefixCache._walk_native(history, messages, index)
                if index < end:  # a shape the accelerator leaves to Python
                    PrefixCache._walk_python(history, index, index + 1, copied=True)
                    index += 1
        else:
            PrefixCache._walk_python(history, start, end, copied=new_copies is not None)
        if new_copies is not None:
            history.copies.extend(new_copies)
            _spread_sizes(history.sizes, history.shapes, start, marshalled)
        history.recipes.extend([None] * (end - len(history.recipes)))

    @staticmethod
    def _walk_native(history: History, messages: list[Any], start: int) -> int:
        """`_walk_python` of the messages from `start` on that the accelerator reads; returns
        where it stopped."""
        assert NATIVE is not None
        stop, shapes, digests, users, assistant, to_read, flagged, unsure = NATIVE.walk(
            messages, start, history.digest
        )
        if shapes:
            history.shapes.extend(shapes)
            history.digests.extend(digests)
            history.users.extend(users)
            history.assistant.extend(assistant)
            history.flagged.extend(flagged)
            history.unsure.extend(unsure)
            history.owns.extend([None] * len(shapes))
            history.keys.extend([None] * len(shapes))
            bare = history.bare
            bare.extend([False] * len(shapes))
            deque(map(bare.__setitem__, assistant, repeat(True)), maxlen=0)  # in C
            owns, detailed = history.owns, history.detailed
            for index in to_read:
                bare[index] = False
                own = owns[index] = _own(messages[index])
                if own is not None and any(part.details for part in own.parts):
                    detailed.append(index)
        return stop

    @staticmethod
    def _walk_python(history: History, start: int, end: int, *, copied: bool) -> None:
        """Messages `start` to `end` (exclusive) in Python; `copied`: their private copies are
        made by the caller."""
        messages = history.messages
        previous = history.digest
        total = history.size
        copies, shapes, digests = history.copies, history.shapes, history.digests
        sizes, owns, keys, bare = history.sizes, history.owns, history.keys, history.bare
        users, assistant, flagged = history.users, history.assistant, history.flagged
        read, chain = identity.read, identity.chain
        add_shape, add_digest = shapes.append, digests.append  # bound once
        # Most messages carry no reasoning of their own: made None (and not bare) in one go.
        owns.extend(repeat(None, end - start))
        bare.extend(repeat(False, end - start))
        for index in range(start, end):
            message = messages[index]
            fast = read(message) if type(message) is dict else None
            if fast is None:
                shape, decided = identity.canonical_decided(message)
                facts = _facts_of(message)
            else:
                shape, decided, facts = fast
            previous = chain(previous, shape)
            if not copied:
                copy, size = _copy(message)
                total += size + len(shape) + _OVERHEAD
                sizes.append(total)
                copies.append(copy)
            if facts & _ASSISTANT:
                assistant.append(index)
                # `carries_nothing`, its tool calls read by `read` already
                if facts & _OWN_FIELDS:
                    own = owns[index] = _own(message)
                    if own is not None and any(part.details for part in own.parts):
                        history.detailed.append(index)
                else:
                    bare[index] = True
            elif facts & _USER:
                users.append(index)
            if facts & _FLAGGED:
                flagged.append(index)
            if not decided:
                history.unsure.append(index)
            add_shape(shape)
            add_digest(previous)
        keys.extend(repeat(None, end - start))

    def remember(self, history: History) -> None:
        """Keep `history` for the next request of its scope (after it was rendered)."""
        if history._remembered:
            return
        counted = history.size + history.held_bytes()
        if counted > self.max_bytes:
            return
        history._remembered = True
        history._counted = counted
        history.messages = ()  # the caller's dicts are not kept alive
        if NATIVE is not None:
            # Long-lived and in no cycle (a recipe refers only to records and fresh values):
            # off the garbage collector's lists, as the copies are (`_accel.copy`).
            NATIVE.untrack(history.recipes)
            if history.planned is not None:
                NATIVE.untrack([history.planned.wanted])
        digests = history.digests
        with self._lock:
            kept = []
            for earlier in self._scopes.pop(history.scope, []):
                # An earlier request whose history this one repeats (and maybe continues) is
                # superseded by it.
                end = len(earlier.digests)
                if end and end <= len(digests) and earlier.digests[-1] == digests[end - 1]:
                    self._forget(earlier)
                else:
                    kept.append(earlier)
            kept.insert(0, history)
            self._bytes += history._counted
            self._count += 1
            self._recency[id(history)] = (history.scope, history)
            while len(kept) > self.per_scope:
                self._forget(kept.pop())
            self._scopes[history.scope] = kept
            while (self._bytes > self.max_bytes or self._count > self.max_histories) and (
                self._recency
            ):
                scope, oldest = next(iter(self._recency.values()))
                held = self._scopes[scope]
                # By identity: `History` compares by value.
                del held[next(i for i, h in enumerate(held) if h is oldest)]
                self._forget(oldest)
                if not held:
                    del self._scopes[scope]

    def _forget(self, history: History) -> None:
        self._bytes -= history._counted
        self._count -= 1
        del self._recency[id(history)]

    @property
    def size(self) -> int:
        """Estimated bytes held."""
        return self._bytes

    def __len__(self) -> int:
        return sum(len(v) for v in self._scopes.values())
