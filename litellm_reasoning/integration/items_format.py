"""`responses` / `aresponses` (SDK, Router, proxy `/v1/responses`): the stored reasoning items
go back before the items they preceded (`wire.responses_items`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..accelerator import turn_marked
from ..core.decisions import summary_of
from ..core.formats import items as core_items
from ..core.messages import continues_prefill
from ..core.policy import TurnPolicy
from ..core.reasoning import Reasoning
from ..core.render import Rendered
from ..core.targets import Target, resolve_target
from ..core.turns import current_turn_start
from ..wire import get_dialect, responses_items
from . import kwargs as read
from .calls import CallState, Capture
from .flows import Flow
from .format_flow import Begun, Done, Plan

if TYPE_CHECKING:
    from .engine import Engine
    from .kwargs import CallFacts


GAPS = frozenset({"missing", "dropped", "over_budget", "stripped"})
"""Decisions that leave an item of the input without the reasoning it came with."""


class ResponsesEntry:
    """`responses` / `aresponses` as an entry point of the pipeline (`format_flow.Entry`).
    LiteLLM's chat bridge fires this hook too, after the chat hook rendered its messages; then
    only `turn` is removed."""

    call_types = read.RESPONSES_CALL_TYPES
    field = "input"
    doing = "rendering the Responses input"
    starts_early = False  # the chat bridge's call keeps the chat hook's state
    blocks_body = False

    def begin(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        facts: CallFacts,
        items: list[Any],
        previous: CallState | None,
        state: CallState | None,
    ) -> Begun | None:
        bridged = (
            previous is not None
            and previous.capture is not None
            and not previous.capture.responses_input
        )
        model = facts.model
        # Resolved as the `responses/<model>` model of its provider, so overrides and the
        # table treat the native calls and the chat bridge alike.
        routed = responses_items.CHAT_BRIDGE_PREFIX + model
        names = (model, *facts.names)
        target = engine.remembered_target(
            ("responses", routed, facts.provider, facts.api_base, names, *engine.overrides),
            lambda: resolve_target(
                facts.provider,
                routed,
                facts.api_base,
                names=names,
                overrides=engine.overrides,
                dialect_of=get_dialect,
            ),
        )
        if bridged or not target.dialect.input_items:
            return None
        asked = responses_items.asked_reasoning_context(kwargs)
        policy = responses_items.policy_for_context(target.policy, asked, target.operator_policy)
        if policy is not target.policy:
            why = f"{target.why}; the client asked for reasoning.context {asked}"
            target = dataclasses.replace(target, policy=policy, why=why)
        return Begun(ResponsesInput(kwargs, target, asked), items)

    def after_pipeline(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        begun: Begun,
        done: Done | None,
        state: CallState,
    ) -> None:
        return None  # the format completes the kwargs itself (`ResponsesInput`)


ENTRY = ResponsesEntry()


@dataclass(slots=True)
class _Planned:
    """The Responses format's own plan of one request."""

    items: list[Any]
    conversation: core_items.Conversation
    own: dict[int, Reasoning]
    own_tokens: dict[int, int]
    facts: CallFacts


class ResponsesInput:
    """Responses input items as a conversation format of the pipeline
    (`format_flow.ConversationFormat`): one call's, whose `kwargs` it completes (the
    encrypted content asked for, `reasoning.context`)."""

    def __init__(self, kwargs: dict[str, Any], target: Target, asked: str | None) -> None:
        self.kwargs, self.target, self.asked = kwargs, target, asked

    def plan(self, engine: Engine, facts: CallFacts, items: list[Any]) -> Plan[_Planned]:
        scope, target = facts.scope, self.target
        walked = engine.item_digests.walk(scope, items)
        conversation = core_items.Conversation.of(scope, items, walked.digests, walked.keys)
        start = current_turn_start(items)  # one scan, for the plan, the read and the budget
        keys = core_items.wanted(conversation, target.policy, start)
        engine.item_digests.remember(walked)
        own = responses_items.own_reasoning(items)
        own_tokens = {i: engine.count_tokens(r) for i, r in own.items()}
        # A reply is filed under the state before the item it precedes (none before item 0).
        before = {i: conversation.digests[i - 1] for i in keys if i > 0}
        return Plan(
            scope,
            keys,
            before,
            start,
            lambda: own_tokens,
            True,
            _Planned(
                items,
                conversation,
                own,
                own_tokens,
                facts,
            ),
            required=responses_items.refused_without(items, keys),
        )

    def render(
        self,
        engine: Engine,
        plan: Plan[_Planned],
        found: Mapping[str, Reasoning],
        unread: Mapping[int, int],
    ) -> Flow[Done]:
        yield from ()  # nothing more to read
        planned, keys, target, kwargs = plan.detail, plan.keys, self.target, self.kwargs
        items, own, call = planned.items, planned.own, planned.facts
        provider, model = call.provider, call.model
        stored = engine.of_origin(
            {i: found[key] for i, key in keys.items() if i not in unread and key in found},
            call.origin,
            provider,
        )
        tokens = {**{i: engine.count_tokens(r) for i, r in stored.items()}, **planned.own_tokens}
        left_out = core_items.over_budget(
            items,
            stored,
            tokens,
            engine.max_reasoning_tokens,
            target.strip,
            unread,
            plan.turn_start,
        )
        tokens.update(unread)
        stored = {i: r for i, r in stored.items() if i not in left_out}
        rendered = responses_items.render_input(
            items,
            stored,
            store=read.request_param(kwargs, "store") is not False,
            provider=provider,
            marked=turn_marked(items),
        )
        kwargs["input"] = rendered.items
        per_item = responses_items.decisions(items, rendered, keys, stored, left_out, own)
        if target.policy is not TurnPolicy.NONE:
            responses_items.ask_for_encrypted_content(kwargs, model, provider)
            responses_items.say_reasoning_context(
                kwargs,
                target.policy,
                read.reasoning_contexts_in_model_map(provider, model),
                asked=self.asked,
                whole=not any(value in GAPS for value in per_item.values()),
            )
        sent = sum(tokens[i] for i in (*rendered.restored, *own))
        saved = sum(tokens[i] for i in left_out)
        counts = Rendered(
            rendered.items,
            plan.turn_start,
            restored=list(rendered.restored),
            dropped=list(rendered.dropped),
            missing=[int(i) for i, value in per_item.items() if value == "missing"],
        )
        return Done(
            rendered.items,
            target,
            counts,
            len(left_out),
            lambda: summary_of(target, per_item, sent, saved),
            {keys[i]: stored[i] for i in rendered.restored if i in stored},
            Capture(
                plan.scope,
                planned.conversation.digest,
                provider,
                model,
                responses_input=True,
                origin=call.origin,
                deployment=call.deployment_id,
                continues_prefill=continues_prefill(items),
            ),
        )


# The reply side: a Responses reply's output items read into records.


def reply_needs_reasoning(output: list[dict[str, Any]]) -> bool:
    """Whether the next request is refused without this reply's reasoning items (its function
    calls go back with their item ids: `responses_items.calls_need_reasoning`)."""
    return responses_items.calls_need_reasoning(output)


def output_of_chat(message: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The output items of the chat reply LiteLLM's bridge made of a Responses reply (a sync
    call rendered through the Responses hook)."""
    return responses_items.output_from_chat(message)


def chat_message_of(output: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant chat message LiteLLM's bridge makes of a Responses reply's `output` (what
    a bridged chat call's capture is keyed as)."""
    return responses_items.chat_message(output)


def reply_records(call: Capture, output: list[dict[str, Any]]) -> dict[str, Reasoning]:
    """Store key -> record of a native Responses reply's reasoning items."""
    conversation = core_items.Conversation(call.scope, [], digest=call.digest)
    return responses_items.records(conversation, output, provider=call.provider, model=call.model)


def keep_streamed_item(state: CallState, index: Any, item: dict[str, Any]) -> None:
    """A Responses stream's finished output item, kept until the stream completes."""
    state.part(responses_items.StreamedItems).keep(index, item)


def streamed_output(state: CallState, output: Sequence[Any]) -> list[Any]:
    """A completed Responses stream's output, with the items it finished in their places."""
    streamed = state.take(responses_items.StreamedItems)
    return streamed.over(output) if streamed is not None else list(output)
