"""Typed input items (the Responses `input`): reasoning comes as items of its own, each before
the item it preceded (its "anchor"), and is stored under the anchor's identity:

* an anchor `function_call` is keyed by its `call_id` and name (random per reply, and
  independent of edits to earlier history), as an assistant chat message with tool calls is;
* an anchor assistant `message` by its place in the conversation: a chained digest of every
  non-reasoning item up to and including it.

Items are read as the chat messages they stand for (`core.identity` conventions), so `"hi"`
and `[{"type": "input_text", "text": "hi"}]` are the same, and ids, `status`, `annotations`,
`logprobs` and `phase` (which clients may or may not keep) do not count. The turn rule is
`core.turns`; the limits `core.limits.leave_out`. These keys are stored data
(tests/core/test_golden_keys.py pins them). Putting reasoning items back and reading replies
are the adapter's work (`wire.openai_responses`). Pure: no LiteLLM, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import identity
from ..limits import leave_out
from ..policy import StripRule, TurnPolicy
from ..reasoning import Reasoning
from ..turns import current_turn_start

_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def is_reasoning(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "reasoning"


def text_of(content: Any) -> Any:
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
        return {"role": str(item.get("role") or ""), "content": text_of(item.get("content"))}
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
    keys: dict[int, str] = field(default_factory=dict)
    """Anchor index -> store key, made once (some known beforehand: a prefix memo's)."""

    @classmethod
    def of(
        cls,
        scope: str,
        items: Sequence[Any],
        chained: Sequence[str] | None = None,
        keys: dict[int, str] | None = None,
    ) -> Conversation:
        """`chained`: `chained_digests(items)` when already known (a prefix memo's); `keys`:
        the store keys already known for this scope and the items up to them, where the keys
        made are added."""
        if chained is None:
            chained = chained_digests(items)
        return cls(scope, list(items), list(chained[1:]), chained[-1], {} if keys is None else keys)

    def key(self, index: int) -> str:
        key = self.keys.get(index)
        if key is None:
            key = self.keys[index] = anchor_key(self.scope, self.items[index], self.digests[index])
        return key


def next_digest(before: str, item: Any) -> str:
    """The digest through `item` (a reasoning item identifies nothing), `before` the one before
    it."""
    if is_reasoning(item):
        return before
    return identity.chain(before, identity.canonical(as_message(item)))


def chained_digests(items: Sequence[Any]) -> list[str]:
    """`out[i]`: the digest before `items[i]`; `out[len]`: of all of them."""
    out = [identity.EMPTY_DIGEST]
    for item in items:
        out.append(next_digest(out[-1], item))
    return out


def anchor_key(scope: str, item: Any, digest_through_item: str) -> str:
    """The store key of the reasoning that preceded anchor `item`."""
    # Responses call ids are random per reply: the tool-call key of release 0.1.0 is kept.
    message = as_message(item)
    legacy = identity.legacy_tool_call_key(scope, message)
    return legacy or identity.message_key(scope, message, digest_through_item)


def wanted(
    conversation: Conversation, policy: TurnPolicy, start: int | None = None
) -> dict[int, str]:
    """`{anchor index: store key}` for the anchors whose reasoning the client did not send and
    `policy` keeps; `start`: the current turn's start, when the caller has it."""
    if policy is TurnPolicy.NONE:
        return {}
    items = conversation.items
    if start is None:
        start = current_turn_start(items)
    out: dict[int, str] = {}
    # `policy.keeps` as two bounds (an anchor calls tools when it is a function call)
    after, tools = policy.keep_bounds(start, len(items))
    for index, item in enumerate(items):
        if not is_anchor(item) or (index > 0 and is_reasoning(items[index - 1])):
            continue
        if index > after or (tools and item.get("type", "message") == "function_call"):
            out[index] = conversation.key(index)
    return out


def over_budget(
    items: Sequence[Any],
    stored: Mapping[int, Reasoning],
    tokens: Mapping[int, int],
    max_tokens: int | None,
    strip: StripRule,
    unread: Mapping[int, int] | None = None,
    start: int | None = None,
) -> list[int]:
    """Anchors of earlier turns whose stored reasoning is left out so that what the request
    carries fits `max_tokens` (`tokens`: by item index, the stored records' and the client's
    own reasoning items'), oldest first; under a `leading_run` strip rule every earlier one
    goes with them. The current turn and the client's own items are never touched.
    `unread`: the records the budget left unread (index -> tokens): counted as stored, and
    left out whatever the rest holds; `start`: the current turn's start, when the caller has
    it."""
    if max_tokens is None:
        return []
    if start is None:
        start = current_turn_start(items)
    # Only the stored records go: the client's own reasoning items are its own.
    droppable = {i for i in (*stored, *(unread or ())) if i <= start}
    left = leave_out(
        sorted(droppable),
        tokens,
        max_tokens=max_tokens,
        droppable=droppable,
        unread=unread or {},
        leading_run=strip == "leading_run",
    )
    return sorted({*left.over_budget, *left.leading_run})
