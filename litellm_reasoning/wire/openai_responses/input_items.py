"""OpenAI Responses `input` items: the turn rule, restoring reasoning items, and capture keys.

A client that drops reasoning still sends its `message`, `function_call` and
`function_call_output` items. Each reasoning item the provider returned preceded one of those
(its "anchor"); it is stored under the anchor's identity and put back right before it:

* an anchor `function_call` is keyed by its `call_id` and name (random per reply, and
  independent of edits to earlier history), as an assistant chat message with tool calls is;
* an anchor assistant `message` by its place in the conversation: a chained digest of every
  non-reasoning item up to and including it.

Items are read as the chat messages they stand for (`identity` conventions), so `"hi"` and
`[{"type": "input_text", "text": "hi"}]` are the same, and ids, `status`, `annotations`,
`logprobs` and `phase` (which clients may or may not keep) do not count.

The turn rule: a user message item starts a turn unless its `turn` is the boolean `false`;
`turn` never reaches the wire. Pure: dicts in, dicts out; no LiteLLM, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core import identity
from ...core.policy import StripRule, TurnPolicy, leading_run_violations
from ...core.policy import over_budget as policy_over_budget
from ...core.reasoning import Reasoning, ReasoningPart
from ...core.turns import current_turn_start, without_turn
from .dialect import encrypted_parts, issued_here, reasoning_input_items

_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def is_reasoning(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "reasoning"


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type", "message") == "message" and "role" in item


def _text(content: Any) -> Any:
    """Message content as `identity` reads chat content: text parts joined, others kept."""
    if not isinstance(content, list):
        return content
    if all(isinstance(p, dict) and p.get("type") in _TEXT_PARTS for p in content):
        return "".join(str(p.get("text") or "") for p in content)
    return [
        {k: v for k, v in p.items() if k not in ("annotations", "logprobs")}
        if isinstance(p, dict)
        else p
        for p in content
    ]


def as_message(item: Any) -> dict[str, Any]:
    """The chat message an input or output item stands for (what identifies it)."""
    if not isinstance(item, dict):
        return {"role": "?", "content": repr(item)}
    kind = item.get("type", "message")
    if kind == "message":
        return {"role": str(item.get("role") or ""), "content": _text(item.get("content"))}
    if kind == "function_call":
        call = {"id": item.get("call_id"), "function": {"name": item.get("name")}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if kind == "function_call_output":
        return {"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")}
    # Other items (web search, custom tool calls …): identified by their whole body.
    return {"role": f"item:{kind}", "content": [item]}


def is_anchor(item: Any) -> bool:
    """Items a reasoning item can precede: a function call or an assistant message."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type", "message")
    return kind == "function_call" or (kind == "message" and item.get("role") == "assistant")


@dataclass(slots=True)
class Conversation:
    """The non-reasoning items of a request, hashed once."""

    scope: str
    items: list[Any]
    digests: list[str] = field(default_factory=list)
    """`digests[i]` identifies every non-reasoning item up to and including `items[i]`
    (for a reasoning item: up to the item before it)."""
    digest: str = identity.EMPTY_DIGEST
    """The whole input: what the reply answers."""

    @classmethod
    def of(cls, scope: str, items: Sequence[Any]) -> Conversation:
        conversation = cls(scope, list(items))
        digest = identity.EMPTY_DIGEST
        for item in items:
            if not is_reasoning(item):
                digest = identity.chain(digest, identity.canonical(as_message(item)))
            conversation.digests.append(digest)
        conversation.digest = digest
        return conversation

    def key(self, index: int) -> str:
        return anchor_key(self.scope, self.items[index], self.digests[index])


def anchor_key(scope: str, item: Any, digest_through_item: str) -> str:
    """The store key of the reasoning that preceded anchor `item`."""
    # Responses call ids are random per reply: the tool-call key of release 0.1.0 is kept.
    message = as_message(item)
    legacy = identity.legacy_tool_call_key(scope, message)
    return legacy or identity.message_key(scope, message, digest_through_item)


def wanted(conversation: Conversation, policy: TurnPolicy) -> dict[int, str]:
    """`{anchor index: store key}` for the anchors whose reasoning the client did not send and
    `policy` keeps."""
    if policy is TurnPolicy.NONE:
        return {}
    items = conversation.items
    start = current_turn_start(items)
    out: dict[int, str] = {}
    for index, item in enumerate(items):
        if not is_anchor(item) or (index > 0 and is_reasoning(items[index - 1])):
            continue
        as_chat = as_message(item)
        if policy.keeps(index, as_chat, start):
            out[index] = conversation.key(index)
    return out


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
) -> RenderedInput:
    """`items` with each found record put back before its anchor, and `turn` removed.

    The `rs_` id goes with an item only when it can be paired: `store` is not false and the
    anchor still carries its own id (an `rs_` id followed by an id-less item is a 400, and with
    `store: false` any `rs_` id is a 404). With `store: false` the client's own reasoning items
    lose their id too, when they hold `encrypted_content` to stand on. `provider`: the
    target's, whose own records it takes besides OpenAI's (`issued_here`).
    """
    out = RenderedInput(items=[])
    for index, item in enumerate(without_turn(items)):
        reasoning = found.get(index)
        if reasoning is not None:
            parts = encrypted_parts(reasoning)
            if issued_here(reasoning, provider) and parts:
                with_id = store and isinstance(item, dict) and bool(item.get("id"))
                out.items += reasoning_input_items(parts, with_id=with_id)
                out.restored.append(index)
            else:
                out.dropped.append(index)
        if not store and is_reasoning(item) and item.get("encrypted_content") and "id" in item:
            item = {k: v for k, v in item.items() if k != "id"}
        out.items.append(item)
    return out


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
            text = _text(item.get("content"))
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


def over_budget(
    items: Sequence[Any],
    stored: Mapping[int, Reasoning],
    tokens: Mapping[int, int],
    max_tokens: int | None,
    strip: StripRule,
    unread: Mapping[int, int] | None = None,
) -> list[int]:
    """Anchors of earlier turns whose stored reasoning is left out so that what the request
    carries fits `max_tokens` (`tokens`: by item index, the stored records' and the client's
    own reasoning items'), oldest first; under a `leading_run` strip rule every earlier one
    goes with them. The current turn and the client's own items are never touched.
    `unread`: the records the budget left unread (index -> tokens): counted as stored, and
    left out whatever the rest holds."""
    if max_tokens is None:
        return []
    start = current_turn_start(items)
    if unread:
        tokens = {**tokens, **unread}
    droppable = {i for i in (*stored, *(unread or ())) if i <= start}
    left_out = policy_over_budget(sorted(tokens), tokens, max_tokens, droppable)
    left_out += [i for i in unread or () if i not in left_out]
    if strip == "leading_run" and left_out:
        left_out += leading_run_violations(sorted(droppable - set(left_out)), left_out)
    return sorted(set(left_out))


def decisions(
    items: Sequence[Any],
    rendered: RenderedInput,
    wanted: Mapping[int, str],
    stored: Mapping[int, Reasoning],
    left_out: Sequence[int],
) -> dict[str, str]:
    """Item index -> what happened to its reasoning, in the chat summary's words: `kept` (a
    reasoning item the client sent), `restored`, `dropped_foreign`, `missing` (wanted, nobody
    had it), `over_budget`."""
    out = {str(i): "kept" for i in own_reasoning(items)}
    out.update({str(i): "missing" for i in wanted if i not in stored and i not in left_out})
    out.update({str(i): "over_budget" for i in left_out})
    out.update({str(i): "dropped_foreign" for i in rendered.dropped})
    out.update({str(i): "restored" for i in rendered.restored})
    return out
