"""The request side of one callback: a call's target and scope, the store lookup (waiting for
captures still running), rendering by the core, the provider's strip rule and the budget.
One flow serves the sync and the async path (`flows`)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter
from typing import Any

from .. import accelerator
from ..core import identity
from ..core.formats import blocks, items
from ..core.limits import (
    TokenCounter,
    estimate_tokens,
    unread_over_budget,
)
from ..core.provenance import of_origin
from ..core.reasoning import Reasoning, tokens_of_chars
from ..core.render import Rendered
from ..core.shared_keys import Reading, exact_key, reading
from ..core.targets import Override, Target, resolve_target
from ..memo.chain_digests import ChainDigests
from ..memo.learned import LearnedPolicies
from ..memo.pending import PendingCaptures
from ..memo.prefix_cache import PrefixCache
from ..memo.refused import RefusedRecords
from ..memo.targets import TargetCache
from ..memo.token_counts import TokenMemo
from ..stores import LocalAnswer, ReasoningStore
from ..wire import get_dialect
from . import capture
from .calls import CallState, Capture, RenderedFor
from .cancellation import CancellationWatch
from .chat_messages import CHAT, Request
from .fallback import Contained
from .flows import Flow, Read, Sizes, WaitAny
from .format_flow import ConversationFormat, Done, Plan
from .kwargs import CallFacts, FactsReader
from .reporting import Reporter
from .streams import finished_stream

logger = logging.getLogger("litellm_reasoning")


@dataclass(slots=True)
class Engine:
    """What one callback instance knows and keeps between requests."""

    store: ReasoningStore
    report: Reporter
    namespace: str
    overrides: list[Override]
    capture_wait_seconds: float
    max_reasoning_tokens: int | None
    count_tokens: TokenCounter
    scope_from_client: bool
    legacy_keys: bool
    pending: PendingCaptures = dataclasses.field(default_factory=PendingCaptures)
    histories: PrefixCache = dataclasses.field(default_factory=PrefixCache)
    block_digests: ChainDigests = dataclasses.field(
        default_factory=lambda: ChainDigests(blocks.next_digest, blocks.EMPTY, blocks.facts_of)
    )
    """The prefix memo of the block-messages format (`/v1/messages`)."""
    item_digests: ChainDigests = dataclasses.field(
        default_factory=lambda: ChainDigests(items.next_digest, identity.EMPTY_DIGEST)
    )
    """The prefix memo of the input-items format (Responses)."""
    targets: TargetCache = dataclasses.field(default_factory=TargetCache)
    refused: RefusedRecords = dataclasses.field(default_factory=RefusedRecords)
    healed_policies: LearnedPolicies = dataclasses.field(default_factory=LearnedPolicies)
    """(scope, provider, model, dialect) -> the policy a refusal of that target asked for."""
    token_memo: TokenMemo = dataclasses.field(init=False)
    cancellation: CancellationWatch = dataclasses.field(init=False)
    facts_of: FactsReader = dataclasses.field(init=False)
    """What the hooks read of a call's kwargs for this engine (the engine never reads them)."""

    def __post_init__(self) -> None:
        self.facts_of = FactsReader(self.namespace, self.scope_from_client)
        self.token_memo = TokenMemo(self.count_tokens)
        self.cancellation = CancellationWatch(self.pending)

    @property
    def legacy_keys_on(self) -> bool:
        """Only a store that outlives the process can hold (or share) what 0.1.0 reads and
        wrote."""
        return self.legacy_keys and self.store.persistent

    # ------------------------------------------------------------------ target and scope

    def target(self, facts: CallFacts) -> Target:
        """The target of a chat call, resolved once per deployment and request shape."""
        resolved = self.remembered_target(
            (*facts.target_key, *self.overrides),
            lambda: resolve_target(
                facts.provider,
                facts.model,
                facts.api_base,
                has_tools=facts.has_tools,
                preserved_thinking=facts.preserved_thinking,
                template_keeps_thinking=facts.template_kept,
                model_keeps_thinking=facts.model_keeps_thinking,
                names=list(facts.names),
                overrides=self.overrides,
                dialect_of=get_dialect,
            ),
        )
        return self.healed(resolved, facts)

    def remembered_target(self, key: tuple[Any, ...], resolve: Callable[[], Target]) -> Target:
        """`resolve()`, worked out once per `key` (everything it is resolved from, the
        operator's overrides included)."""
        try:
            resolved: Target | None = self.targets.get(key)
        except TypeError:  # an unhashable input: resolved every time
            return resolve()
        if resolved is None:
            resolved = resolve()
            self.targets.put(key, resolved)
        return resolved

    def healed(self, target: Target, facts: CallFacts) -> Target:
        """The target, with the policy a refusal of this provider asked for in requests of
        this scope (`refusals`)."""
        if self.healed_policies:
            key = (facts.scope, facts.provider, facts.model, target.dialect.name)
            policy = self.healed_policies.get(key)
            if policy is not None and policy is not target.policy:
                why = f"{target.why}; the provider refused the previous policy ({policy.value} now)"
                target = dataclasses.replace(target, policy=policy, why=why)
        return target

    # ------------------------------------------------------------------ per-call state

    def conclude(
        self,
        state: CallState,
        target: Target,
        provider: str | None,
        model: str | None,
        restored: dict[str, Reasoning] | tuple[Any, Any, Any, Any],
        capture_of: Capture,
    ) -> None:
        """What a rendered request of any format leaves for its reply and for a refusal of
        it: the target it was rendered for, what went in from the store (store key -> record,
        or `CallState.restored_source`'s references), and its capture, opened."""
        state.rendered_for = RenderedFor(
            provider, model, target.dialect, target.policy, target.operator_policy
        )
        if isinstance(restored, dict):
            state.restored, state.restored_source = restored, None
        else:
            state.restored, state.restored_source = {}, restored
        self.begin(state, capture_of)

    def begin(self, state: CallState, capture_of: Capture) -> None:
        """Remember what this call's capture needs, and open it for later requests to wait on."""
        state.capture = capture_of
        state.handled = True
        anchor = capture_of.anchor
        place = None if anchor == identity.NO_ANCHOR else identity.place_of(anchor)
        self.cancellation.watch(state.id)
        self.pending.open(state.id, capture_of.scope, capture_of.digest, state, place)

    # ------------------------------------------------------------------ lookup

    def lookup(
        self,
        scope: str,
        keys: dict[int, str],
        before: Mapping[int, str],
        legacy: Callable[[Sequence[int]], Mapping[int, tuple[str, ...]]] | None = None,
        required: bool = False,
        places: Callable[[int], str | None] | None = None,
    ) -> Flow[dict[str, Reasoning]]:
        """The stored records of `keys` (then, for the ones missing, of their `legacy` keys),
        waiting (at most `capture_wait_seconds`) for a capture still running for a reply they
        belong to (streams and sync calls capture after the caller has the reply); a finished
        stream nobody captured yet (a client that stopped reading at the finish chunk) is
        captured now instead of waited for. `required`: the target refuses the request without
        them, so the store may take its longer deadline. `places`: message index -> its place
        in its turn (`identity.place_of`; None: its key does not follow from it), where a capture
        is also found when no conversation state in `before` names it (a history cut at its
        head), asked only for the messages the read missed. A message under a tool-call key
        two conversations wrote is re-keyed in `keys` to its conversation's own copy
        (`shared_keys`): the record found there, or none."""
        if not keys:
            return {}
        if required:
            self.report.stats["required_lookups"] += 1
        # Captures open before each read: one that closes after the read began may have put its
        # record (or kept it locally) just after the store answered.
        open_before = self.pending.open_among(scope, before.values())
        closes_before = self.pending.closes
        # Each key once, in the plan's order: no store needs them sorted, and sorting 500 keys
        # costs ~80 us against ~16 us.
        found: dict[str, Reasoning] = yield Read(
            scope, list(dict.fromkeys(keys.values())), required
        )
        if legacy is not None and not isinstance(found, LocalAnswer):
            # Earlier releases' keys: made and read only for the messages the read missed.
            missed = (
                []
                if all(map(found.__contains__, keys.values()))  # in C: the common case
                else [i for i, key in keys.items() if key not in found]
            )
            older_keys = legacy(missed) if missed else {}
            older = sorted({key for i in missed for key in older_keys.get(i, ())})
            if older:
                found.update((yield Read(scope, older, required)))
        deadline = time.monotonic() + self.capture_wait_seconds
        late_reads = 0
        while True:
            events, ready = self._open_captures(scope, keys, before, found, places)
            for state, assembled in ready:
                yield from capture.capture(self, state, assembled)
            if events:
                self.report.stats["waited"] += 1
                if not (yield WaitAny(events, deadline)):
                    break
            if events or ready:
                missing = _unsettled(keys, before, found)
            else:
                # Nothing open to wait for now: read again only what a capture that closed
                # since the last read began may have just put (checked after the look for open
                # captures, so a close at any moment after that read began is seen).
                missing = self._closed_since(
                    scope, keys, before, found, places, open_before, closes_before
                )
                late_reads += 1
                if not missing or late_reads > _LATE_READS:
                    break
            open_before = self.pending.open_among(scope, before.values())
            closes_before = self.pending.closes
            found.update((yield Read(scope, missing, required)))
        yield from self._own_conversations(scope, keys, before, found, required)
        return found

    def _closed_since(
        self,
        scope: str,
        keys: Mapping[int, str],
        before: Mapping[int, str],
        found: Mapping[str, Reasoning],
        places: Callable[[int], str | None] | None,
        open_before: set[str],
        closes_before: int,
    ) -> list[str]:
        """The keys still unsettled whose capture closed after `closes_before` (its conversation
        state in `open_before` and open no more, or its place closed since)."""
        if self.pending.closes == closes_before:
            return []
        closed = open_before - self.pending.open_among(scope, open_before) if open_before else set()
        if not closed and places is None:
            return []
        late: set[str] = set()
        if not closed:  # only a miss can have its place's capture closed since
            keys = {i: key for i, key in keys.items() if key not in found}
        for i, key in keys.items():
            state = before.get(i)
            if state in closed:
                if not _settled(found.get(key), state):
                    late.add(key)
            elif places is not None and key not in found:  # by place: only for a miss
                place = places(i)
                if place is not None and self.pending.closed_since(scope, place, closes_before):
                    late.add(key)
        return sorted(late)

    def _own_conversations(
        self,
        scope: str,
        keys: dict[int, str],
        before: Mapping[int, str],
        found: dict[str, Reasoning],
        required: bool,
    ) -> Flow[None]:
        """Messages whose tool-call key two conversations wrote: re-keyed to their own
        conversation's copy (`shared_keys.exact_key`), found or not (then nothing is restored:
        a history cut at its head cannot tell whose record it would be). A record of another
        conversation alone under the key is read past too where this conversation's copy
        exists (the mark was evicted before it)."""
        exact: dict[int, str] = {}
        other: set[int] = set()
        # Each record's conversation beside the message's, in C: the common case is every
        # record filed for its own conversation (or for none), so nothing is left to look at.
        filed = accelerator.filed_for(keys, before, found)
        if filed:  # one pass, in C
            return
        held_by = list(map(_CONVERSATION_OF, map(found.get, keys.values(), repeat(_NOT_FOUND))))
        befores = list(map(before.get, keys))
        # Without the accelerator: only records filed for a conversation compared (a miss and a
        # record under a position key hold None; no digest is empty, so `compress` and `filter`
        # leave out just those).
        if (
            filed is None
            and "" not in held_by
            and list(compress(befores, held_by)) == list(filter(None, held_by))
        ):
            return
        for i, key, held, conversation in zip(keys, keys.values(), held_by, befores, strict=True):
            if held is None or conversation is None or held == conversation:
                continue  # not found, filed for no conversation, or for this one
            how = reading(held, conversation)
            if how is not Reading.RESTORE:
                exact[i] = exact_key(key, conversation)
                if how is Reading.OTHER:
                    other.add(i)
        if not exact:
            return
        copies = yield Read(scope, sorted(set(exact.values())), required)
        for i, copy_key in exact.items():
            if copy_key in copies:
                keys[i] = copy_key
                found[copy_key] = copies[copy_key]
                self.report.stats["shared_key_own"] += 1
            elif i in other:
                continue  # one writer: a history cut or edited before the message
            else:
                keys[i] = copy_key
                self.report.stats["shared_key_ambiguous"] += 1
                logger.debug(
                    "litellm-reasoning: message %d: two conversations wrote its tool-call key and "
                    "its own conversation's record is not there (a history cut at its head?): "
                    "none restored",
                    i,
                )

    def _open_captures(
        self,
        scope: str,
        keys: Mapping[int, str],
        before: Mapping[int, str],
        found: Mapping[str, Reasoning],
        places: Callable[[int], str | None] | None = None,
    ) -> tuple[list[Any], list[tuple[CallState, Any]]]:
        """Captures still running for replies this request continues and has no record of
        (`before[i]`: the conversation state message `i` answered; else its place in its turn,
        `places(i)`; neither: none to wait for), and the finished streams among them nobody
        captured yet."""
        events: list[Any] = []
        ready: list[tuple[CallState, Any]] = []
        if not len(self.pending):
            return events, ready
        # Only a message whose conversation state has a capture open now, or (by place) one the
        # read missed, can have one to wait for: on a busy worker other calls' captures are
        # open, and most of a long history's messages are neither.
        open_states = self.pending.open_among(scope, before.values())
        by_place = places is not None
        for i, key in keys.items():
            conversation = before.get(i)
            is_open = conversation in open_states
            if not is_open and not (by_place and key not in found):
                continue
            record = found.get(key)
            if _settled(record, conversation):
                continue
            owners = self.pending.owners(scope, conversation) if conversation and is_open else []
            if not owners and places is not None and record is None:
                place = places(i)
                owners = self.pending.owners(scope, place) if place is not None else []
            for event, state in owners:
                if event.is_set():
                    continue
                if isinstance(state, CallState):
                    assembled = None
                    with Contained(self.report.fail, "assembling a finished stream"):
                        assembled = finished_stream(state)
                    if assembled is not None:
                        ready.append((state, assembled))
                        continue
                events.append(event)
        return events, ready

    # ------------------------------------------------------------------ rendering

    def prepare(self, facts: CallFacts, messages: list[Any]) -> Request:
        """The chat format's plan of `messages` (`ChatMessages.prepare`)."""
        return CHAT.prepare(self, facts, messages)

    def run(
        self,
        fmt: ConversationFormat[Any],
        facts: CallFacts,
        items: list[Any],
        state: CallState,
    ) -> Flow[Done | None]:
        """The one request pipeline of every conversation format (`format_flow`): the format's
        plan, the one store read, the format's render, and what a rendered request leaves
        (`record`). None: the format does not render this request."""
        plan = fmt.plan(self, facts, items)
        if plan is None:
            return None
        found, unread = yield from self.read_plan(plan)
        done = yield from fmt.render(self, plan, found, unread)
        self.record(state, facts.provider, facts.model, done)
        return done

    def read_plan(self, plan: Plan[Any]) -> Flow[tuple[Mapping[str, Reasoning], dict[int, int]]]:
        """`read` of what `plan` looks up (a format reading more later hands a plan of those)."""
        return (
            yield from self.read(
                plan.scope,
                plan.keys,
                plan.before,
                plan.own_tokens,
                plan.turn_start,
                budget_may_drop=plan.budget_may_drop,
                legacy=plan.legacy,
                required=plan.required,
                places=plan.places,
                budgeted=plan.budgeted,
            )
        )

    def record(self, state: CallState, provider: str | None, model: str | None, done: Done) -> None:
        """What a rendered request of any format leaves: its capture opened and what a refusal
        of it evicts (`conclude`), what the body patch must put back, its counts and its
        decisions summary (reporting never undoes the rendering)."""
        report = self.report
        report.rendered(done.counts, done.target.dialect.name)
        report.stats["over_budget"] += done.over_budget
        with Contained(report.fail, "reporting the request's decisions"):
            state.summary = report.decide(done.summary())
        state.body_patch = done.body_patch
        self.conclude(state, done.target, provider, model, done.restored, done.capture)

    def read(
        self,
        scope: str,
        keys: dict[int, str],
        before: Mapping[int, str],
        own_tokens: Callable[[], Mapping[int, int]],
        start: int,
        *,
        budget_may_drop: bool,
        legacy: Callable[[Sequence[int]], Mapping[int, tuple[str, ...]]] | None = None,
        required: bool = False,
        places: Callable[[int], str | None] | None = None,
        budgeted: Collection[int] | None = None,
    ) -> Flow[tuple[Mapping[str, Reasoning], dict[int, int]]]:
        """The one store read of a request of any format (chat messages, block messages, input
        items): the records `max_reasoning_tokens` leaves out whatever the rest holds are
        decided from their sizes and never read (`decide_unread`; only where the budget may
        drop earlier turns here: `budget_may_drop`, and a policy that requires them never);
        the rest are looked up (`lookup`), the refused ones left out. `keys` is updated where
        the lookup re-keyed a message (two conversations share its key). Returns (records by
        key, unread index -> estimated tokens). `own_tokens`: the tokens of the reasoning the
        client's messages carry and the policy keeps (asked only when the sizes are known);
        `budgeted`: the indices whose records the budget may leave unread (None: all)."""
        unread: dict[int, int] = {}
        budget = self.max_reasoning_tokens
        if budget is not None and budget_may_drop and keys and min(keys) <= start:
            sized = keys if budgeted is None else {i: keys[i] for i in budgeted if i in keys}
            stored = yield from self.stored_tokens(scope, sized)
            if stored is not None:
                unread = self.decide_unread(stored, own_tokens(), start)
        to_read = {i: key for i, key in keys.items() if i not in unread} if unread else keys
        found = yield from self.lookup(
            scope,
            to_read,
            {i: before[i] for i in to_read if i in before} if unread else before,
            legacy,
            required,
            places,
        )
        if to_read is not keys:  # re-keyed where two conversations share a key
            keys.update(to_read)
        return self.refused.without_refused(scope, found), unread

    def stored_tokens(self, scope: str, keys: Mapping[int, str]) -> Flow[dict[int, int] | None]:
        """The estimated tokens of the stored records of `keys`, by index, from the sizes the
        store keeps beside them (absent: no record). None when that cannot decide anything
        before the read: no budget, an operator's own token counter (it needs the records), a
        store that keeps no sizes (or is down), a record of an earlier release (size unknown),
        a refused key among them."""
        if (
            self.max_reasoning_tokens is None
            or not keys
            or not self.store.knows_sizes
            or self.count_tokens is not estimate_tokens
        ):
            return None
        names = list(dict.fromkeys(keys.values()))
        if self.refused.any_of(scope, names):
            return None
        try:
            sizes = yield Sizes(scope, names)
        except Exception as exc:  # the read that follows decides about the store
            logger.debug("litellm-reasoning: record sizes not read (%r)", exc)
            return None
        if sizes is None:
            return None
        tokens: dict[int, int] = {}
        for i, key in keys.items():
            if key in sizes:
                size = sizes[key]
                if size is None:
                    return None
                tokens[i] = tokens_of_chars(size)
        return tokens

    def decide_unread(
        self, stored: dict[int, int] | None, own: Mapping[int, int], start: int
    ) -> dict[int, int]:
        """Of `stored` (`stored_tokens`), what the budget leaves out whatever the rest holds:
        never read. `own`: the tokens of the reasoning the client's messages carry and the
        policy keeps (a stored record takes its message's place); `start`: the current turn's
        start (only earlier turns are left out)."""
        budget = self.max_reasoning_tokens
        if stored is None or budget is None:
            return {}
        droppable = [i for i in {*stored, *own} if i <= start]
        unread = unread_over_budget(stored, own, budget, droppable)
        self.report.stats["unread_over_budget"] += len(unread)
        return unread

    def complete(
        self,
        request: Request,
        found: Mapping[str, Reasoning],
        state: CallState,
        unread: Mapping[int, int] | None = None,
    ) -> Rendered:
        """`request` (`prepare`) rendered with the records `found`, recorded as `run` records
        it (`explain` reads the store itself)."""
        done = CHAT.rendered(self, request, found, unread)
        self.record(state, request.provider, request.model, done)
        return done.counts

    def of_origin(
        self, stored: dict[int, Reasoning], origin: str, provider: str | None
    ) -> dict[int, Reasoning]:
        """`stored` as this deployment may receive it (`provenance.of_origin`)."""
        out, foreign = of_origin(stored, origin, provider)
        if foreign:
            self.report.stats["foreign_origin"] += len(foreign)
            logger.debug(
                "litellm-reasoning: the signed or encrypted reasoning of messages %s was issued "
                "by another deployment (another organisation, account or project): left out",
                foreign,
            )
        return out


_LATE_READS = 4
"""Reads again for captures that closed since the last read, at most (each finds its record: more
are other calls closing under the same place, on a busy worker)."""


@dataclass(frozen=True, slots=True)
class _NotFound:
    conversation: None = None


_NOT_FOUND = _NotFound()
"""What `_own_conversations` reads for a key the read did not find: no conversation."""
_CONVERSATION_OF = attrgetter("conversation")


def _unsettled(
    keys: Mapping[int, str], before: Mapping[int, str], found: Mapping[str, Reasoning]
) -> list[str]:
    """The keys of `keys` whose record is not settled yet (`_settled`)."""
    return sorted({key for i, key in keys.items() if not _settled(found.get(key), before.get(i))})


def _settled(record: Reasoning | None, before: str | None) -> bool:
    """A record found for a message whose conversation before it is `before` needs no capture
    of that conversation to finish: it is filed for it, or no other conversation's is (a
    record of another conversation under its tool-call key may yet be joined by its own)."""
    if record is None:
        return False
    if record.conversation is None or before is None:
        return True
    return reading(record.conversation, before) is not Reading.OTHER
