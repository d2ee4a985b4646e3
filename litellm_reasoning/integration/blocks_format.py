"""`/v1/messages` (Claude Code, the Anthropic SDKs) to a deployment LiteLLM sends the Anthropic
body to: the Anthropic Messages format as an input format of its own (`wire.messages_blocks`),
with the stores, tenants, policies, summary and metrics of chat calls."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, count
from operator import is_not
from typing import TYPE_CHECKING, Any

from ..accelerator import without_turn
from ..core import identity
from ..core.decisions import summary_of
from ..core.dialect import Dialect
from ..core.formats import blocks
from ..core.messages import continues_prefill
from ..core.reasoning import Reasoning
from ..core.render import Rendered
from ..core.targets import Target
from ..core.turns import current_turn_start
from ..wire import messages_blocks
from . import rust_core, sync_body
from .calls import CallState, Capture
from .fallback import Contained
from .flows import Flow, Write
from .format_flow import Begun, Done, Plan, stored_records
from .kwargs import MESSAGES_CALL_TYPES

if TYPE_CHECKING:
    from .engine import Engine
    from .kwargs import CallFacts


class MessagesEntry:
    """`/v1/messages` (`anthropic_messages`) as an entry point of the pipeline
    (`format_flow.Entry`). Thinking blocks a client dropped go back in place, for the current
    turn and for the earlier turns the target's policy keeps; nothing the client sent is taken
    out but `turn` (this hook's rewrite reaches the wire)."""

    call_types = MESSAGES_CALL_TYPES
    field = "messages"
    doing = "rendering the Anthropic-format request"
    starts_early = True
    blocks_body = True  # never edited as a chat body later

    def begin(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        facts: CallFacts,
        items: list[Any],
        previous: CallState | None,
        state: CallState | None,
    ) -> Begun | None:
        assert state is not None  # `start` made it
        cleaned = kwargs["messages"] = without_turn(items)
        provider = facts.provider
        target = engine.target(facts)
        rust_core.warn_if_served_natively(provider, facts.model)
        dialect = target.dialect
        as_issued = messages_blocks.takes_blocks_as_issued(provider)
        if not dialect.keeps_block_order and not as_issued:
            # LiteLLM's chat adapter: rendered on the chat call it makes (same logging object),
            # which is told which of its user messages start a turn.
            state.part(blocks.TranslatedTurns).starts = blocks.chat_user_turns(items)
            return None
        return Begun(BlockMessages(kwargs, items, target, as_issued), cleaned)

    def after_pipeline(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        begun: Begun,
        done: Done | None,
        state: CallState,
    ) -> None:
        flow = begun.format
        assert isinstance(flow, BlockMessages)
        dialect = flow.target.dialect
        if dialect.keeps_block_order and not flow.as_issued:
            _thinking_off_without_block(engine, state, dialect, kwargs, flow.facts)


ENTRY = MessagesEntry()


@dataclass(slots=True)
class _Planned:
    """The block-messages format's own plan of one request."""

    messages: list[Any]
    """The request's messages, without `turn`."""
    digests: list[str]
    facts: list[blocks.BlockFacts]
    wanted: dict[int, str]
    """Index -> key of the messages whose blocks are restored."""
    reorderable: dict[int, str]
    """Index -> key of the messages that carry their blocks, maybe not in the issued order."""
    previous: _PreviousKeys
    facts_of_call: CallFacts
    anchor: identity.Anchor


class BlockMessages:
    """Anthropic-format messages to a deployment that takes them as they are (Claude, or a
    third-party API's own blocks as issued) as a conversation format of the pipeline
    (`format_flow.ConversationFormat`): one call's, whose `kwargs` it completes."""

    def __init__(
        self,
        kwargs: dict[str, Any],
        sent: list[Any],
        target: Target,
        as_issued: bool,
    ) -> None:
        self.kwargs, self.sent, self.target = kwargs, sent, target
        self.as_issued = as_issued
        """The deployment takes blocks as they were issued (a third-party API's own)."""
        self.facts: list[blocks.BlockFacts] = []
        """The facts of the messages as rendered (`render`)."""

    def plan(self, engine: Engine, facts: CallFacts, items: list[Any]) -> Plan[_Planned]:
        cleaned, target = items, self.target
        dialect = target.dialect
        scope = facts.scope
        system = blocks.system_digest(self.kwargs.get("system"))
        walked = engine.block_digests.walk(scope, cleaned, system)
        digests, message_facts = walked.digests, walked.facts
        # `turn` read where the client sent it, of the messages that may start a turn
        start = current_turn_start(self.sent, (blocks.asking(message_facts),))
        compacted = blocks.compaction_index(cleaned, message_facts)
        if compacted is not None:
            start = min(start, compacted)  # the kept turns go back whole, as the current one
        wanted, reorderable = blocks.wanted(
            scope, cleaned, target.policy, start, digests, system, message_facts, walked.keys
        )
        engine.block_digests.remember(walked)
        if compacted is not None:  # nothing before the compaction block is read by the API
            wanted = {i: key for i, key in wanted.items() if i > compacted}
            reorderable = {i: key for i, key in reorderable.items() if i > compacted}
        # Claude's open tool loop is refused without its block: that read may wait longer, and
        # also for a capture filed under the message's place (a history cut at its head).
        required = dialect.has_tool_loop_rule and blocks.refused_without(
            cleaned, message_facts, wanted
        )

        def place_of(i: int) -> str | None:
            if not message_facts[i].tool_uses:
                return None
            return identity.place_of(blocks.place_of(cleaned, i, system, walked.facts))

        asked = {**wanted, **reorderable}
        previous = _PreviousKeys(scope, cleaned, engine.legacy_keys_on)
        return Plan(
            scope,
            asked,
            {i: digests[i] for i in asked},
            start,
            lambda: blocks.own_tokens(
                cleaned, target.policy, start, engine.count_tokens, message_facts
            ),
            # What the budget leaves out is never read, where it may leave anything out.
            not (self.as_issued or target.policy.earlier_turns_required),
            _Planned(
                cleaned,
                digests,
                message_facts,
                wanted,
                reorderable,
                previous,
                facts,
                blocks.place_of(cleaned, len(cleaned), system, walked.facts),
            ),
            legacy=previous,
            required=required,
            places=place_of if required else None,
            budgeted=wanted,  # the reordered messages carry their blocks already
        )

    def render(
        self,
        engine: Engine,
        plan: Plan[_Planned],
        found: Mapping[str, Reasoning],
        unread: Mapping[int, int],
    ) -> Flow[Done]:
        planned, target = plan.detail, self.target
        dialect = target.dialect
        cleaned, wanted, reorderable = planned.messages, planned.wanted, planned.reorderable
        previous, call = planned.previous, planned.facts_of_call
        provider, origin = call.provider, call.origin
        start = plan.turn_start
        asked = {i: key for i, key in plan.keys.items() if i not in unread}
        records = stored_records(asked, previous.keys, found)
        _rekeyed(asked, wanted, reorderable)

        def unsigned_of(records: dict[int, Any]) -> dict[int, Any]:
            # A third-party Anthropic-compatible API's blocks: issued by this deployment
            return {
                i: r
                for i, r in records.items()
                if messages_blocks.issued_unsigned(r, provider, origin)
            }

        as_issued = self.as_issued
        unsigned = {} if as_issued else unsigned_of(records)
        if unsigned and unread:
            # A third-party API's blocks go back on every turn (as issued): read the rest too.
            more = {i: wanted[i] for i in unread}
            found_more, _ = yield from engine.read_plan(
                dataclasses.replace(
                    plan,
                    keys=more,
                    before={i: planned.digests[i] for i in more},
                    budget_may_drop=False,
                )
            )
            found = {**found, **found_more}
            asked.update(more)
            records = stored_records(asked, previous.keys, found)
            _rekeyed(asked, wanted, reorderable)
            unsigned, unread = unsigned_of(records), {}
        if unsigned:  # a third-party Anthropic-compatible API issued these blocks
            as_issued, records = True, unsigned
        self.as_issued = as_issued
        usable = {
            i: record
            for i, record in records.items()
            if (
                messages_blocks.issued_by(record, provider)
                if as_issued
                else dialect.accepts(record)
            )
        }
        usable = engine.of_origin(usable, origin, provider)
        stored = {i: record for i, record in usable.items() if i in wanted}
        out, restored_at, fronted = messages_blocks.restore(
            cleaned, wanted, stored, start, as_issued=as_issued
        )
        reordered_at = []
        for i in reorderable:
            issued = usable.get(i)
            fixed = None
            if issued is not None:
                fixed = messages_blocks.in_issued_order(out[i], issued, as_issued=as_issued)
            if fixed is not None:
                out[i] = fixed
                reordered_at.append(i)
                fronted.pop(i, None)
        limited = blocks.limit(
            out,
            target.policy,
            start,
            leading_run=target.strip == "leading_run",
            max_tokens=engine.max_reasoning_tokens,
            count=engine.count_tokens,
            earlier_required=as_issued,
            unread=unread,
            facts=(message_facts := _facts_after(cleaned, planned.facts, out, fronted)),
        )
        gone = {*limited.stripped, *limited.over_budget}
        message_facts = self.facts = _facts_after(out, message_facts, limited.messages)
        out = self.kwargs["messages"] = limited.messages
        restored_at = [i for i in restored_at if i not in gone]
        missing = [i for i in wanted if i > start and i not in stored]
        reordered_at = [i for i in reordered_at if i not in gone]
        counts = Rendered(
            out,
            start,
            restored=restored_at,
            reordered=reordered_at,
            missing=missing,
            stripped=list(limited.stripped),
        )

        def summary() -> dict[str, Any]:
            per_message, sent = blocks.summary_counts(
                out, restored_at, missing, limited, reordered_at, message_facts, stored
            )
            tokens = sum(map(engine.count_tokens, sent))
            return summary_of(target, per_message, tokens, limited.saved)

        return Done(
            out,
            target,
            counts,
            len(limited.over_budget),
            summary,
            (wanted, previous, stored, restored_at),
            Capture(
                plan.scope,
                planned.digests[-1],
                provider,
                call.model,
                origin=origin,
                deployment=call.deployment_id,
                anchor=planned.anchor,
                messages_format=True,
                continues_prefill=continues_prefill(cleaned),
            ),
        )


def _thinking_off_without_block(
    engine: Engine,
    state: CallState,
    dialect: Dialect,
    kwargs: dict[str, Any],
    facts: Sequence[blocks.BlockFacts],
) -> None:
    """Claude's open tool loop whose message has no block to send (no stored record, another
    provider's reply): thinking off for this call where the model allows it, as on chat
    (`sync_body.thinking_off`), and the blocks of earlier messages with it."""
    out = kwargs["messages"]
    if not blocks.open_loop_without_block(out, facts):
        return
    off = sync_body.thinking_off(engine, state, dialect, [kwargs])
    if off is None:
        return
    dialect.turn_thinking_off(kwargs, off)
    state.forget_restored()  # none of the store's blocks goes out
    kwargs["messages"] = [
        _without_blocks(message) if fact.reasoning_at else message
        for message, fact in zip(out, facts, strict=True)
    ]


def _without_blocks(message: Any) -> Any:
    """An assistant message without its reasoning blocks; as it is where nothing else is left."""
    stripped = blocks.without_reasoning_blocks(message)
    return stripped if stripped.get("content") else message


def _rekeyed(asked: Mapping[int, str], *into: dict[int, str]) -> None:
    """The keys the lookup moved a message to (its conversation's copy of a shared key), in
    `into` too (what a refusal evicts)."""
    for keys in into:
        for i in keys:
            if i in asked:
                keys[i] = asked[i]


class _PreviousKeys:
    """The keys release 0.3.0 filed messages under (rolling upgrades), made when the engine
    asks: for the messages its read missed, and for those a refusal evicts. None on a store no
    other release shares."""

    def __init__(self, scope: str, messages: Sequence[Any], shared: bool) -> None:
        self.scope, self.messages, self.shared = scope, messages, shared
        self.keys: dict[int, tuple[str, ...]] = {}

    def __call__(self, indices: Sequence[int]) -> Mapping[int, tuple[str, ...]]:
        if self.shared:
            for i in indices:
                if i not in self.keys:
                    key = blocks.previous_message_key(self.scope, self.messages[i])
                    self.keys[i] = (key,) if key is not None else ()
        return self.keys


def _facts_after(
    before: Sequence[Any],
    facts: Sequence[blocks.BlockFacts],
    after: Sequence[Any],
    fronted: Mapping[int, int] | None = None,
) -> list[blocks.BlockFacts]:
    """The facts of `after`, a step's new list of `before` (`facts` are of those): read again
    where the step put another message, but for the assistant messages `fronted` names (index
    -> how many reasoning blocks the step put in front of the message's content), whose facts
    follow from their own."""
    out = list(facts)
    fronted = fronted or {}
    # The messages the step replaced, found in C (each of the others is the same object).
    for i in compress(count(), map(is_not, before, after)):
        leading = fronted.get(i)
        derived = blocks.with_leading_reasoning(facts[i], leading) if leading else None
        out[i] = derived if derived is not None else blocks.facts_of(after[i])
    return out


def read_sse(engine: Engine, state: CallState, sse: list[str], chunk: bytes | str) -> Flow[None]:
    """One chunk of a `/v1/messages` stream: at `message_stop` (before the client has that
    event) the reply is captured from the SSE text received."""
    read = False
    with Contained(engine.report.fail, "reading a /v1/messages stream"):
        if state.captured or not state.messages_format:
            return
        text = chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else chunk
        sse.append(text)
        if "message_stop" not in "".join(sse[-2:]):
            return
        text = "".join(sse)
        content = messages_blocks.content_of_stream(text)
        usage, model = (
            messages_blocks.usage_and_model_of_stream(text) if content is not None else (None, None)
        )
        read = True
    if read and content is not None:
        yield from capture(engine, state, content, usage, model)


def capture_collected(engine: Engine, state: CallState) -> Flow[None]:
    """An SDK stream's reply, from the SSE bytes LiteLLM collected (`patches`): LiteLLM's
    success event carries it chat-shaped, which would be filed under the wrong key."""
    collected = state.take(messages_blocks.CollectedSSE)
    raw = collected.pieces if collected is not None else None
    content = usage = model = None
    if raw is not None and not state.captured:
        with Contained(engine.report.fail, "reading a /v1/messages stream"):
            text = b"".join(raw).decode("utf-8", "replace")
            content = messages_blocks.content_of_stream(text)
            usage, model = messages_blocks.usage_and_model_of_stream(text)
    if content is None:  # nothing whole to keep (a cut stream), or captured already
        state.claim(engine)
        engine.pending.close(state.id)
        return
    yield from capture(engine, state, content, usage, model)


def capture(
    engine: Engine, state: CallState | None, content: Any, usage: Any = None, model: Any = None
) -> Flow[None]:
    """An Anthropic-format reply's content blocks, kept under the key its assistant message
    will have when the client sends it back; `usage`: the reply's (its prompt cache);
    `model`: the model that answered (with Anthropic's `fallbacks`, not always the one asked
    for), which the record names."""
    if state is None or not isinstance(content, list):
        return
    call = state.claim(engine)
    try:
        with Contained(engine.report.fail, "capturing the Anthropic-format reply"):
            if call is not None:
                engine.report.prompt_cache(state, messages_blocks.prompt_cache_of_usage(usage))
            if call is None or not call.messages_format or call.continues_prefill:
                return
            answered = model if isinstance(model, str) and model else call.model
            record = messages_blocks.record_of_reply(
                content, provider=call.provider, model=answered
            )
            if record is None:
                return
            record = dataclasses.replace(record, origin=call.origin, deployment=call.deployment)
            message = {"role": "assistant", "content": content}
            key = blocks.message_key(call.scope, call.digest, message, call.anchor)
            previous = blocks.previous_message_key(call.scope, message)
            # A tool-use key two conversations can share: the record says whose it is.
            placed = (
                record
                if previous is None
                else dataclasses.replace(record, conversation=call.digest)
            )
            records = {key: placed}
            if previous is not None and engine.legacy_keys_on:  # for 0.3.0 replicas
                records[previous] = dataclasses.replace(record, superseded=True)
            yield Write(call.scope, records)
            engine.report.stats["captured"] += 1
    finally:
        engine.pending.close(state.id)


def keep_stream_bytes(state: CallState, raw: Iterable[Any]) -> None:
    """An Anthropic-format SDK stream's SSE bytes as LiteLLM collected them, kept on the call's
    state for its capture (`capture_collected`)."""
    state.part(messages_blocks.CollectedSSE).pieces = [bytes(piece) for piece in raw]
