"""OpenAI Responses `input` items: restoring reasoning items before their anchors, reading the
reasoning items of a reply (and of LiteLLM's chat bridge) into records under their anchors'
keys. What identifies an item, the turn rule and the limits are the core's
(`core.formats.items`). Pure: dicts in, dicts out; no LiteLLM, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core import identity
from ...core.formats.items import (
    Conversation,
    anchor_key,
    as_message,
    is_anchor,
    is_reasoning,
    text_of,
)
from ...core.reasoning import Reasoning, ReasoningPart
from ...core.turns import without_turn

# The `name as name` imports are re-exported for the Responses entry point, which reaches this
# family only here (`wire.responses_items`): the model route and the parameters it sets.
from .dialect import CHAT_BRIDGE_PREFIX as CHAT_BRIDGE_PREFIX
from .dialect import ask_for_encrypted_content as ask_for_encrypted_content
from .dialect import asked_reasoning_context as asked_reasoning_context
from .dialect import encrypted_parts, issued_here, reasoning_input_items
from .dialect import policy_for_context as policy_for_context
from .dialect import say_reasoning_context as say_reasoning_context


@dataclass(slots=True)
class StreamedItems:
    """Per call (`CallState.part`): the finished output items of a Responses stream, by output
    index (the completed event's output may leave their reasoning out)."""

    done: dict[int, dict[str, Any]] = field(default_factory=dict)

    def keep(self, index: Any, item: dict[str, Any]) -> None:
        self.done[index if isinstance(index, int) else len(self.done)] = item

    def over(self, output: Sequence[Any]) -> list[Any]:
        """`output` with each item this stream finished in its place."""
        return [self.done.get(i, item) for i, item in enumerate(output)]


@dataclass(slots=True)
class RenderedInput:
    items: list[Any]
    restored: list[int] = field(default_factory=list)
    """Input indices (of the client's items) before which stored reasoning was put."""
    dropped: list[int] = field(default_factory=list)
    """Anchors whose stored reasoning this target cannot take (another issuer)."""


def render_input(
    items: Sequence[Any],
    found: Mapping[int, Reasoning],
    *,
    store: bool,
    provider: str | None = None,
    marked: Iterable[int] | None = None,
) -> RenderedInput:
    """`items` with each found record put back before its anchor, and `turn` removed.

    The `rs_` id goes with an item only when it can be paired: `store` is not false and the
    anchor still carries its own id (an `rs_` id followed by an id-less item is a 400, and with
    `store: false` any `rs_` id is a 404). With `store: false` the client's own reasoning items
    lose their id too, when they hold `encrypted_content` to stand on. `provider`: the
    target's, whose own records it takes besides OpenAI's (`issued_here`); `marked`: as for
    `turns.without_turn`.
    """
    cleaned = without_turn(items, marked)
    if store:  # the client's items go as they are: copied between the found ones in C
        return _rendered_between(cleaned, found, provider)
    return _rendered_each(cleaned, found, store, provider)


def _rendered_each(
    items: Sequence[Any], found: Mapping[int, Reasoning], store: bool, provider: str | None
) -> RenderedInput:
    """`render_input` of `items` (without `turn`), item by item."""
    out = RenderedInput(items=[])
    for index, item in enumerate(items):
        reasoning = found.get(index)
        if reasoning is not None:
            _put(out, index, item, reasoning, store, provider)
        if not store and is_reasoning(item) and item.get("encrypted_content") and "id" in item:
            item = {k: v for k, v in item.items() if k != "id"}
        out.items.append(item)
    return out


def _rendered_between(
    items: Sequence[Any], found: Mapping[int, Reasoning], provider: str | None
) -> RenderedInput:
    """`_rendered_each` with `store` on, which changes none of the client's items: the items
    between two found ones go in as one slice."""
    out = RenderedInput(items=[])
    done = 0
    for index in sorted(i for i in found if 0 <= i < len(items)):
        out.items += items[done:index]
        _put(out, index, items[index], found[index], True, provider)
        done = index
    out.items += items[done:]
    return out


def _put(
    out: RenderedInput,
    index: int,
    item: Any,
    reasoning: Reasoning,
    store: bool,
    provider: str | None,
) -> None:
    """The items of the record found for anchor `index` (`item`), where they go before it."""
    parts = encrypted_parts(reasoning)
    if issued_here(reasoning, provider) and parts:
        with_id = store and isinstance(item, dict) and bool(item.get("id"))
        out.items += reasoning_input_items(parts, with_id=with_id)
        out.restored.append(index)
    else:
        out.dropped.append(index)


def refused_without(items: Sequence[Any], wanted: Mapping[int, str]) -> bool:
    """Whether OpenAI refuses the request when a reasoning item of `wanted` (anchor index ->
    key) stays out: a function call sent with its item id (`fc_…`) whose reply had a reasoning
    item ("Item 'fc_…' of type 'function_call' was provided without its required 'reasoning'
    item: 'rs_…'", cline#12242, rig#751). A request that needs its record waits for it."""
    for index in wanted:
        item = items[index]
        if isinstance(item, dict) and item.get("type") == "function_call" and item.get("id"):
            return True
    return False


def calls_need_reasoning(output: Sequence[Any]) -> bool:
    """Whether a reply's function calls, sent back with their item ids, need its reasoning
    item (`refused_without`): a function call with an id after a reasoning item."""
    reasoned = False
    for item in output:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "reasoning":
            reasoned = True
        elif kind == "function_call" and reasoned and item.get("id"):
            return True
    return False


def reasoning_part(item: Mapping[str, Any]) -> ReasoningPart | None:
    """A reasoning output item as a stored part (None without `encrypted_content`: nothing the
    API could read back)."""
    encrypted = item.get("encrypted_content")
    if not isinstance(encrypted, str) or not encrypted:
        return None
    summary = item.get("summary")
    if not isinstance(summary, list):
        summary = []
    summary = [dict(s) for s in summary if isinstance(s, Mapping)]
    text = "".join(str(s.get("text") or "") for s in summary)
    item_id = item.get("id")
    return ReasoningPart(
        kind="encrypted",
        text=text,
        data=encrypted,
        id=item_id if isinstance(item_id, str) and item_id else None,
        details={"summary": summary},
    )


def records(
    conversation: Conversation,
    output: Sequence[Mapping[str, Any]],
    *,
    provider: str | None,
    model: str | None,
) -> dict[str, Reasoning]:
    """`{store key: reasoning}` for each run of reasoning items in `output` that precedes an
    anchor, keyed as the next request will name that anchor. A trailing run (no anchor: an
    incomplete reply) is not stored."""
    out: dict[str, Reasoning] = {}
    digest = conversation.digest
    pending: list[ReasoningPart] = []
    for item in output:
        if is_reasoning(item):
            part = reasoning_part(item)
            if part is not None:
                pending.append(part)
            continue
        before = digest
        message = as_message(item)
        digest = identity.chain(digest, identity.canonical(message))
        if pending and is_anchor(item):
            key = anchor_key(conversation.scope, item, digest)
            # A function call's key is its call id alone, which providers with deterministic
            # ids repeat: the record says whose it is (`shared_keys`).
            placed = before if identity.has_tool_call_ids(message) else None
            out[key] = Reasoning(
                parts=tuple(pending), provider=provider, model=model, conversation=placed
            )
        pending = []
    return out


def chat_message(output: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The assistant chat message LiteLLM's bridge makes of `output` (for its store key), with
    the reasoning items on it: text of the message items, function calls as tool calls."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type")
        if kind == "reasoning":
            items.append(dict(item))
        elif kind == "message":
            text = text_of(item.get("content"))
            texts.append(text if isinstance(text, str) else "")
        elif kind == "function_call":
            calls.append(
                {
                    "id": item.get("call_id") or item.get("id"),
                    "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")},
                }
            )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    if items:
        message["reasoning_items"] = items
    return message


def output_from_chat(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The output items an assistant chat message from LiteLLM's bridge stands for, in the
    order the bridge sends them back: its reasoning items, its text, its function calls."""
    items = message.get("reasoning_items")
    out = (
        [dict(item) for item in items if isinstance(item, Mapping)]
        if isinstance(items, list)
        else []
    )
    content = message.get("content")
    if isinstance(content, str) and content:
        out.append({"type": "message", "role": "assistant", "content": content})
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            out.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": function.get("arguments"),
                }
            )
    return out


def own_reasoning(items: Sequence[Any]) -> dict[int, Reasoning]:
    """Item index -> the reasoning of each reasoning item the client sent itself."""
    out: dict[int, Reasoning] = {}
    for index, item in enumerate(items):
        part = reasoning_part(item) if is_reasoning(item) else None
        if part is not None:
            out[index] = Reasoning(parts=(part,))
    return out


def decisions(
    items: Sequence[Any],
    rendered: RenderedInput,
    wanted: Mapping[int, str],
    stored: Mapping[int, Reasoning],
    left_out: Sequence[int],
    own: Iterable[int] | None = None,
) -> dict[str, str]:
    """Item index -> what happened to its reasoning, in the chat summary's words: `kept` (a
    reasoning item the client sent), `restored`, `dropped_foreign`, `missing` (wanted, nobody
    had it), `over_budget`. `own`: the indices of `own_reasoning(items)`, when known."""
    out = {str(i): "kept" for i in (own_reasoning(items) if own is None else own)}
    out.update({str(i): "missing" for i in wanted if i not in stored and i not in left_out})
    out.update({str(i): "over_budget" for i in left_out})
    out.update({str(i): "dropped_foreign" for i in rendered.dropped})
    out.update({str(i): "restored" for i in rendered.restored})
    return out
