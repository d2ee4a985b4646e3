"""Chat messages (`completion` / `acompletion`, and the provider body on the sync path) as a
conversation format of the one pipeline (`Engine.run`): the prefix cache's walk, the target
and the plan (`prepare`); with the records read, the core's render, the adapter's `finish` and
the limits (`rendered`)."""

from __future__ import annotations

import dataclasses
import logging
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import identity
from ..core.decisions import summarize
from ..core.limits import (
    Limited,
    RecordCounts,
    TokenCounts,
    apply_limits,
    estimate_tokens,
)
from ..core.messages import continues_prefill
from ..core.reasoning import Reasoning
from ..core.render import Rendered, effective_turn_start, plan, refused_without, render
from ..core.targets import Target
from ..core.turns import mark_deliveries
from ..memo.prefix_cache import REPLAY, History, Planned
from ..wire import get_dialect
from .calls import BodyPatch, Capture
from .flows import Flow
from .format_flow import Done, Plan, stored_records

if TYPE_CHECKING:
    from .engine import Engine
    from .kwargs import CallFacts

logger = logging.getLogger("litellm_reasoning")

_PREVIOUS = (-1).__add__
"""index -> the index before it (in C)."""


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
    """What it is rendered for (`rendered` may switch its dialect: `Dialect.for_records`)."""
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


class ChatMessages:
    """The chat format (`format_flow.ConversationFormat`)."""

    def __init__(self, delivery_starts: Sequence[bool] | None = None) -> None:
        self.delivery_starts = delivery_starts
        """Whether each user message starts a turn, where the chat call is LiteLLM's
        translation of an Anthropic-format request (which drops `turn`); None: as sent."""

    def prepare(self, engine: Engine, facts: CallFacts, messages: list[Any]) -> Request:
        """The walk (reusing what the conversation's earlier request hashed), the target and
        the plan: which messages are looked up, under which keys."""
        scope = facts.scope
        target = engine.target(facts)
        dialect = target.dialect
        # One pass over the history (reusing what the conversation's earlier request hashed):
        # the digests name this call's reply and the lookups.
        history = engine.histories.walk(scope, messages)
        owns = history.owns
        # Asked of the user messages the walk found: not a pass over a long tool loop.
        turn_start = effective_turn_start(messages, dialect, (history.users,))
        policy = target.policy
        planned = history.planned
        if planned is not None and planned.holds_for(dialect, policy, turn_start):
            # The conversation's earlier request planned its messages for the same target and
            # turn: its plan of them holds (it depends on nothing after them); only the
            # messages after them are planned here.
            start = planned.count
            assistant = history.assistant
            tail = plan(
                messages,
                dialect,
                policy,
                owns,
                assistant[bisect_left(assistant, start) :],
                turn_start=turn_start,
            )
            wanted = [*planned.wanted, *tail]
            keys = dict(planned.keys)
            if tail:
                keys.update(history.keys_for(tail))
            before = dict(planned.before)
        else:
            tail = wanted = plan(
                messages, dialect, policy, owns, history.assistant, turn_start=turn_start
            )
            keys = history.keys_for(wanted)
            before = {}
        # The conversation state each looked-up message answered (the digest before it), in C.
        before.update(
            zip(tail, map(history.digests.__getitem__, map(_PREVIOUS, tail)), strict=True)
        )
        if 0 in before:  # nothing before the first message
            before[0] = identity.EMPTY_DIGEST
        # Copies: the lookup re-keys `keys` in place where two conversations share a key.
        history.planned = Planned(
            dialect, policy, turn_start, len(messages), wanted, dict(keys), dict(before)
        )
        required = refused_without(messages, dialect, policy, wanted)
        return Request(
            messages,
            target,
            facts.provider,
            facts.model,
            scope,
            keys,
            before,
            history.digest,
            owns,
            # Only a store shared with earlier releases can hold what they wrote.
            LegacyKeys(history if engine.legacy_keys_on else None, {}),
            history.anchor(len(messages)),
            history,
            (facts.origin, facts.deployment_id),
            required,
            turn_start,
        )

    def plan(self, engine: Engine, facts: CallFacts, items: list[Any]) -> Plan[Request]:
        if self.delivery_starts is not None:
            items = mark_deliveries(items, self.delivery_starts) or items
        request = self.prepare(engine, facts, items)
        target = request.target
        dialect = target.dialect
        start = request.turn_start  # the budget's (only earlier turns are left out)
        return Plan(
            request.scope,
            request.keys,
            request.before,
            start,
            lambda: _own_tokens(request, start),
            not (dialect.passthrough or target.policy.earlier_turns_required),
            request,
            legacy=request.legacy,
            required=request.required,
            # By place only where the target refuses the request without the record: another
            # conversation's capture at the same place can make a miss wait.
            places=request.place_of if request.required else None,
        )

    def render(
        self,
        engine: Engine,
        plan: Plan[Request],
        found: Mapping[str, Reasoning],
        unread: Mapping[int, int],
    ) -> Flow[Done]:
        yield from ()  # nothing more to read
        return self.rendered(engine, plan.detail, found, unread)

    def rendered(
        self,
        engine: Engine,
        request: Request,
        found: Mapping[str, Reasoning],
        unread: Mapping[int, int] | None = None,
    ) -> Done:
        """`request` rendered with the records `found` (by key, the refused ones left out:
        `Engine.read`): the core's render, the adapter's `finish`, the limits."""
        stored = engine.of_origin(
            stored_records(request.keys, request.legacy.made, found),
            request.origin[0],
            request.provider,
        )
        dialect = request.target.dialect
        other = dialect.for_records(
            stored, request.provider, request.model or "", request.origin[0]
        )
        turn_start: int | None = request.turn_start
        if other is not None:  # e.g. a third-party Anthropic API's own blocks, as it issued them
            dialect = get_dialect(other)
            request.target = dataclasses.replace(request.target, dialect=dialect)
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
            replay=REPLAY,
        )
        finished = dialect.finish(request.messages, rendered, stored, request.model or "")
        rendered = finished.applied_to(rendered)
        if finished.signed_from_ids or finished.dummy_signed:
            engine.report.stats["dummy_signatures"] += len(finished.dummy_signed)
            logger.debug(
                "litellm-reasoning: %s: first function calls of messages %s signed with the "
                "signature kept in their id, of messages %s with the dummy signature (no "
                "signature from this platform)",
                dialect.name,
                finished.signed_from_ids,
                finished.dummy_signed,
            )
        if history is not None:
            engine.histories.remember(history)
        rendered, limited = _limit(engine, request, rendered, stored, unread)
        target = request.target
        return Done(
            rendered.messages,
            target,
            rendered,
            len(limited.over_budget),
            lambda: summarize(rendered, target, limited),
            # As references: turned into keys only when a refusal asks.
            (request.keys, request.legacy, stored, rendered.restored),
            Capture(
                request.scope,
                request.digest,
                request.provider,
                request.model,
                anchor=request.anchor,
                bridged=dialect.input_items,
                origin=request.origin[0],
                deployment=request.origin[1],
                continues_prefill=continues_prefill(request.messages),
            ),
            BodyPatch(dialect, rendered.messages, finished.layouts)
            if dialect.patches_body or finished.layouts
            else None,
        )


CHAT = ChatMessages()


def _own_tokens(request: Request, start: int) -> dict[int, int]:
    """The tokens of the reasoning a chat request's messages carry and its policy keeps."""
    policy, messages = request.target.policy, request.messages
    return {
        i: reasoning.estimated_tokens
        for i, reasoning in enumerate(request.owns)
        if reasoning is not None and not reasoning.is_empty and policy.keeps(i, messages[i], start)
    }


def _limit(
    engine: Engine,
    request: Request,
    rendered: Rendered,
    stored: Mapping[int, Reasoning],
    unread: Mapping[int, int] | None,
) -> tuple[Rendered, Limited]:
    """The provider's strip rule and the budget, after the policy."""
    history = request.history
    counted: TokenCounts
    if engine.count_tokens is estimate_tokens:
        counted = RecordCounts(stored, request.owns, rendered.restored)
    else:
        counted = _memo_counts(engine, request, rendered, stored)
    rendered, limited = apply_limits(
        rendered,
        request.messages,
        request.target.dialect,
        request.target.policy,
        strip=request.target.strip,
        max_tokens=engine.max_reasoning_tokens,
        counted=counted,
        assistant=history.assistant if history is not None else None,
        unread=unread,
    )
    return rendered, limited


def _memo_counts(
    engine: Engine, request: Request, rendered: Rendered, stored: Mapping[int, Reasoning]
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
    return engine.token_memo.bind(history.recipes if history is not None else None, reasoning_at)
