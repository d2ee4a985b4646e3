"""The request side of one callback: a call's target and scope, the store lookup (waiting for
captures still running), rendering by the core, the provider's strip rule and the budget.
One flow serves the sync and the async path (`flows`)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import identity
from ..core.decisions import summarize
from ..core.dialect import Dialect
from ..core.formats import blocks, items
from ..core.limits import (
    Limited,
    RecordCounts,
    TokenCounter,
    TokenCounts,
    apply_limits,
    estimate_tokens,
    unread_over_budget,
)
from ..core.messages import continues_prefill
from ..core.provenance import of_origin
from ..core.reasoning import Reasoning, tokens_of_chars
from ..core.render import Rendered, effective_turn_start, plan, refused_without, render
from ..core.shared_keys import Reading, exact_key, reading
from ..core.targets import Override, Target, resolve_target
from ..memo.chain_digests import ChainDigests
from ..memo.learned import LearnedPolicies
from ..memo.pending import PendingCaptures
from ..memo.prefix_cache import History, PrefixCache
from ..memo.refused import RefusedRecords
from ..memo.targets import TargetCache
from ..memo.token_counts import TokenMemo
from ..stores import LocalAnswer, ReasoningStore
from ..wire import get_dialect
from . import capture
from .calls import CallState, Capture, RenderedFor, new_state
from .cancellation import CancellationWatch
from .fallback import Contained
from .flows import Flow, Read, Sizes, WaitAny, adrive, drive
from .kwargs import CallFacts, FactsReader
from .reporting import Reporter
from .streams import finished_stream

logger = logging.getLogger("litellm_reasoning")


@dataclass(slots=True)
class LegacyKeys:
    """Earlier releases' keys of the tool-call messages among the indices it is called with,
    made from `history` (None: this store is not shared with other releases) and kept in
    `made`. Kept by the call state for a refusal to evict: it holds the history, never the
    request (the call state would keep it and its rendered messages alive)."""

    history: History | None
    made: dict[int, tuple[str, ...]]

    def __call__(self, indices: Sequence[int]) -> Mapping[int, tuple[str, ...]]:
        if self.history is not None:
            self.made.update(self.history.legacy_keys_for(indices))
        return self.made


@dataclass(slots=True)
class Request:
    """One request being rendered: its target, scope and the store keys it looks up."""

    messages: list[Any]
    target: Target
    dialect: Dialect
    """The adapter of `target.dialect` (looked up once; `complete` may change both)."""
    provider: str | None
    model: str | None
    scope: str
    keys: dict[int, str]
    """Message index -> store key, for the messages whose reasoning is looked up."""
    before: dict[int, str]
    """Message index -> digest of the conversation before it (what its capture is filed under)."""
    digest: str
    """Digest of the whole history: the state this call's reply answers."""
    owns: list[Reasoning | None]
    """The reasoning each message carries itself (read once)."""
    legacy: LegacyKeys
    """Earlier releases' keys of its tool-call messages (rolling upgrades), made for the
    messages the read missed and those a refusal evicts."""
    anchor: identity.Anchor
    """Where this call's reply will stand in its turn."""
    history: History | None = None
    """The history as hashed (kept after rendering, so the next request reuses it)."""
    origin: tuple[str, str | None] = ("", None)
    """(`identity.origin_of` the deployment, its Router id)."""
    required: bool = False
    """The target refuses this request without the records looked up (`refused_without`)."""
    turn_start: int = 0
    """`effective_turn_start` for `dialect` (scanned once, for the plan, the budget and the
    render)."""

    def place_of(self, index: int) -> str | None:
        """Where message `index` stands in its turn (`identity.place_of`) when its key follows
        from that place (a tool-call message's does); else None."""
        message = self.messages[index]
        if self.history is None or not isinstance(message, dict):
            return None
        if not identity.has_tool_call_ids(message):
            return None
        return identity.place_of(self.history.anchor(index))


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
        key: tuple[Any, ...] | None = (*facts.target_key, *self.overrides)
        try:
            resolved = self.targets.get(key)
        except TypeError:  # an unhashable input: resolved every time
            resolved, key = None, None
        if resolved is None:
            provider, model = facts.provider, facts.model
            resolved = resolve_target(
                provider,
                model,
                facts.api_base,
                has_tools=facts.has_tools,
                preserved_thinking=facts.preserved_thinking,
                template_keeps_thinking=facts.template_kept,
                model_keeps_thinking=facts.model_keeps_thinking,
                names=list(facts.names),
                overrides=self.overrides,
            )
            if key is not None:
                self.targets.put(key, resolved)
        return self.healed(resolved, facts)

    def healed(self, target: Target, facts: CallFacts) -> Target:
        """The target, with the policy a refusal of this provider asked for in requests of
        this scope (`refusals`)."""
        if self.healed_policies:
            key = (facts.scope, facts.provider, facts.model, target.dialect)
            policy = self.healed_policies.get(key)
            if policy is not None and policy is not target.policy:
                why = f"{target.why}; the provider refused the previous policy ({policy.value} now)"
                target = dataclasses.replace(target, policy=policy, why=why)
        return target

    # ------------------------------------------------------------------ per-call state

    def start(self, details: dict[str, Any] | None) -> CallState:
        """A new state for this attempt of a call; the attempt it replaces (a retry) is over."""
        state, previous = new_state(details)
        state.owner = self
        if previous is not None:
            self.pending.close(previous.id)
        return state

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
        self.pending.open(state.id, capture_of.scope, capture_of.digest, state, place)
        self.cancellation.watch(state.id)

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
        found: dict[str, Reasoning] = yield Read(scope, sorted(set(keys.values())), required)
        if legacy is not None and not isinstance(found, LocalAnswer):
            # Earlier releases' keys: made and read only for the messages the read missed.
            missed = [i for i, key in keys.items() if key not in found]
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
        for i, key in keys.items():
            record = found.get(key)
            if record is None:
                continue
            held = record.conversation
            if held is None:
                continue
            conversation = before.get(i)
            if conversation is None or held == conversation:  # filed for it: the common case
                continue
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
        for i, key in keys.items():
            record = found.get(key)
            if _settled(record, before.get(i)):
                continue
            owners = self.pending.owners(scope, before[i]) if i in before else []
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
        scope = facts.scope
        target = self.target(facts)
        dialect = get_dialect(target.dialect)
        # One pass over the history (reusing what the conversation's earlier request hashed):
        # the digests name this call's reply and the lookups.
        history = self.histories.walk(scope, messages)
        owns = history.owns
        turn_start = effective_turn_start(messages, dialect)
        wanted = plan(
            messages, dialect, target.policy, owns, history.assistant, turn_start=turn_start
        )
        digests, empty = history.digests, identity.EMPTY_DIGEST
        required = refused_without(messages, dialect, target.policy, wanted)
        return Request(
            messages,
            target,
            dialect,
            facts.provider,
            facts.model,
            scope,
            history.keys_for(wanted),
            {i: digests[i - 1] if i > 0 else empty for i in wanted},
            history.digest,
            owns,
            # Only a store shared with earlier releases can hold what they wrote.
            LegacyKeys(history if self.legacy_keys_on else None, {}),
            history.anchor(len(messages)),
            history,
            (facts.origin, facts.deployment_id),
            required,
            turn_start,
        )

    def render_flow(
        self, facts: CallFacts, messages: list[Any], state: CallState
    ) -> Flow[tuple[Rendered, Target]]:
        request = self.prepare(facts, messages)
        target, dialect = request.target, request.dialect
        start = request.turn_start  # the budget's (only earlier turns are left out)
        keys = request.keys
        found, unread = yield from self.read(
            request.scope,
            keys,
            request.before,
            lambda: self._own_tokens(request, start),
            start,
            budget_may_drop=not (dialect.passthrough or target.policy.earlier_turns_required),
            legacy=request.legacy,
            required=request.required,
            # By place only where the target refuses the request without the record: another
            # conversation's capture at the same place can make a miss wait.
            places=request.place_of if request.required else None,
        )
        rendered = self.complete(request, found, state, unread)
        return rendered, request.target  # `complete` may have changed its dialect

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

    def _own_tokens(self, request: Request, start: int) -> dict[int, int]:
        """The tokens of the reasoning a chat request's messages carry and its policy keeps."""
        policy, messages = request.target.policy, request.messages
        return {
            i: reasoning.estimated_tokens
            for i, reasoning in enumerate(request.owns)
            if reasoning is not None
            and not reasoning.is_empty
            and policy.keeps(i, messages[i], start)
        }

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
        names = sorted(set(keys.values()))
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

    async def arender(
        self, facts: CallFacts, messages: list[Any], state: CallState
    ) -> tuple[Rendered, Target]:
        return await adrive(self.store, self.render_flow(facts, messages, state))

    def render(
        self, facts: CallFacts, messages: list[Any], state: CallState
    ) -> tuple[Rendered, Target]:
        return drive(self.store, self.render_flow(facts, messages, state))

    def complete(
        self,
        request: Request,
        found: Mapping[str, Reasoning],
        state: CallState,
        unread: Mapping[int, int] | None = None,
    ) -> Rendered:
        """`request` rendered with the records `found` (by key, the refused ones left out:
        `read`), the limits applied, its capture opened and its decisions reported."""
        stored = self.of_origin(
            stored_records(request.keys, request.legacy.made, found),
            request.origin[0],
            request.provider,
        )
        dialect = request.dialect
        other = dialect.for_records(
            stored, request.provider, request.model or "", request.origin[0]
        )
        turn_start: int | None = request.turn_start
        if other is not None:  # e.g. a third-party Anthropic API's own blocks, as it issued them
            request.target = dataclasses.replace(request.target, dialect=other)
            dialect = request.dialect = get_dialect(other)
            turn_start = None  # the other dialect's own validity rule decides it
        history = request.history
        rendered = render(
            request.messages,
            dialect,
            request.target.policy,
            stored,
            request.owns,
            assistant=history.assistant if history is not None else None,
            flagged=history.flagged if history is not None else None,
            recipes=history.recipes if history is not None else None,
            bare=history.bare if history is not None else None,
            turn_start=turn_start,
        )
        finished = dialect.finish(request.messages, rendered, stored, request.model or "")
        rendered = finished.applied_to(rendered)
        state.layouts = finished.layouts
        if finished.signed_from_ids or finished.dummy_signed:
            self.report.stats["dummy_signatures"] += len(finished.dummy_signed)
            logger.debug(
                "litellm-reasoning: %s: first function calls of messages %s signed with the "
                "signature kept in their id, of messages %s with the dummy signature (no "
                "signature from this platform)",
                request.target.dialect,
                finished.signed_from_ids,
                finished.dummy_signed,
            )
        if history is not None:
            self.histories.remember(history)
        rendered, limited = self._limit(request, rendered, stored, unread)
        self.conclude(
            state,
            request.target,
            request.provider,
            request.model,
            # As references: turned into keys only when a refusal asks.
            (request.keys, request.legacy, stored, rendered.restored),
            Capture(
                request.scope,
                request.digest,
                request.provider,
                request.model,
                anchor=request.anchor,
                bridged=request.dialect.input_items,
                origin=request.origin[0],
                deployment=request.origin[1],
                continues_prefill=continues_prefill(request.messages),
            ),
        )
        self.report.rendered(rendered, request.target.dialect)
        # Reporting never undoes the rendering.
        with Contained(self.report.fail, "reporting the request's decisions"):
            self.report.decide(summarize(rendered, request.target, limited), state)
        return rendered

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

    def _limit(
        self,
        request: Request,
        rendered: Rendered,
        stored: Mapping[int, Reasoning],
        unread: Mapping[int, int] | None,
    ) -> tuple[Rendered, Limited]:
        """The provider's strip rule and the budget, after the policy."""
        history = request.history
        counted: TokenCounts
        if self.count_tokens is estimate_tokens:
            counted = RecordCounts(stored, request.owns, rendered.restored)
        else:
            counted = self._memo_counts(request, rendered, stored)
        rendered, limited = apply_limits(
            rendered,
            request.messages,
            request.dialect,
            request.target.policy,
            strip=request.target.strip,
            max_tokens=self.max_reasoning_tokens,
            counted=counted,
            assistant=history.assistant if history is not None else None,
            unread=unread,
        )
        self.report.stats["over_budget"] += len(limited.over_budget)
        return rendered, limited

    def _memo_counts(
        self, request: Request, rendered: Rendered, stored: Mapping[int, Reasoning]
    ) -> TokenCounts:
        """Counts by an operator's own counter, remembered per render recipe."""
        restored_as_rendered = rendered.restored
        restored: set[int] = set()

        def reasoning_at(index: int) -> Reasoning | None:
            # Asked only for what the memo does not know yet (the newest messages, or all on
            # a cold request): the set is made on the first such call.
            if not restored and restored_as_rendered:
                restored.update(restored_as_rendered)
            return stored.get(index) if index in restored else request.owns[index]

        history = request.history
        # Each message's render recipe stands for the reasoning it sent or stripped (a recipe
        # is reused only while that reasoning is the same value): counted once per recipe.
        return self.token_memo.bind(history.recipes if history is not None else None, reasoning_at)


_LATE_READS = 4
"""Reads again for captures that closed since the last read, at most (each finds its record: more
are other calls closing under the same place, on a busy worker)."""


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


def stored_records(
    keys: Mapping[int, str],
    legacy: Mapping[int, tuple[str, ...]],
    found: Mapping[str, Reasoning],
) -> dict[int, Reasoning]:
    """Message index -> its record: under its own key, else one an earlier release wrote under
    its key there, newest release first (never a copy marked superseded: written there for
    older replicas by a release that also wrote the record under its own key)."""
    stored = {i: found[key] for i, key in keys.items() if key in found}
    for i, older_keys in legacy.items():
        if i in stored:
            continue
        for key in older_keys:
            record = found.get(key)
            if record is not None and not record.superseded:
                stored[i] = record
                break
    return stored
