"""OpenAI's Responses API: encrypted reasoning items, sent back before the item they preceded.

What the Responses API takes back (shared notes, provider rules §4):

* each `reasoning` item (`summary`, `encrypted_content`) back in `input`, in order, immediately
  before the message or function_call that followed it;
* pairing is checked by id: an `rs_…` id whose following item is missing or changed is a 400
  ("Item 'rs_…' of type 'reasoning' was provided without its required following item", recorded
  in pydantic-ai's `test_openai_responses_thinking_with_modified_history`), and with
  `store: false` an `rs_…` id is a 404 (the item was never persisted). An item without an id is
  verified from its `encrypted_content` alone, so that is the form sent whenever the id cannot be
  paired: always through LiteLLM's chat bridge (it sends the following function_call / message
  without their `fc_` / `msg_` ids), and with `store: false`;
* `encrypted_content` is only returned when `include: ["reasoning.encrypted_content"]` is asked
  for, so it is added (merged into the caller's `include`) whenever reasoning is kept.

Earlier turns. Older reasoning models drop earlier turns' reasoning items themselves ("including
them is harmless"), GPT-5.6+ use them (`reasoning.context`, reported default `all_turns`), and
keeping them leaves the prompt prefix of the previous request unchanged, so the cache still hits.
The default policy is therefore `all_turns`.

Issuer: only reasoning OpenAI issued (or the client sent itself) is sent; another provider's
signed or encrypted reasoning is left out. Pure: no LiteLLM, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ...core.policy import TurnPolicy
from ...core.reasoning import Reasoning, ReasoningPart
from .._base import BaseDialect, strip_reasoning

CHAT_BRIDGE_PREFIX = "responses/"
"""LiteLLM's model prefix for OpenAI's Responses API (`openai/responses/<model>`); a native
`responses` call to `<provider>/<model>` is resolved as this model of its provider too."""

ENCRYPTED_INCLUDE = "reasoning.encrypted_content"
"""The `include` value that makes the Responses API return `encrypted_content`."""

RESPONSES_ISSUERS = frozenset({"openai"})
"""LiteLLM providers whose encrypted reasoning api.openai.com can read (Azure is its own issuer)."""

ENDPOINT_ISSUERS = frozenset({"hosted_vllm"})
"""Providers whose reasoning blobs the serving endpoint itself makes (vLLM's
`vllm-reasoning-v1.` blobs, or blobs sealed with that server's key): one deployment's blob goes
back only to the same `api_base`, whatever the credentials (self-hosted servers often share
none)."""

ASK_ALWAYS = frozenset({"hosted_vllm"})
"""Providers asked for `reasoning.encrypted_content` whatever the model: vLLM takes the value
and returns blobs where it makes them (a vLLM that makes none ignores it)."""

_REASONING_MODEL = re.compile(r"^(o\d|gpt-([5-9]|1\d)(?!\d)|codex)", re.IGNORECASE)
"""OpenAI reasoning models: only they accept `include: ["reasoning.encrypted_content"]`."""


def is_reasoning_model(model: str) -> bool:
    """Whether `model` (bare or `…/model`) is an OpenAI reasoning model."""
    return bool(_REASONING_MODEL.match(model.rsplit("/", 1)[-1]))


def with_encrypted_include(include: Any) -> list[Any]:
    """`include` with `reasoning.encrypted_content` added (the caller's values kept, in order)."""
    values = list(include) if isinstance(include, (list, tuple)) else []
    if ENCRYPTED_INCLUDE not in values:
        values.append(ENCRYPTED_INCLUDE)
    return values


def ask_for_encrypted_content(
    request: dict[str, Any], model: str, provider: str | None = None
) -> None:
    """Add `reasoning.encrypted_content` to the request's `include` (where the caller put
    theirs: top level or `extra_body`), for reasoning models or a request that asks for
    reasoning (OpenAI's other models reject it), and always on `ASK_ALWAYS` providers."""
    extra = request.get("extra_body")
    extra = extra if isinstance(extra, dict) else {}
    asked = provider in ASK_ALWAYS or any(
        source.get(name)
        for source in (request, extra)
        for name in ("reasoning", "reasoning_effort")
    )
    if not (is_reasoning_model(model) or asked):
        return
    if "include" in extra:
        extra["include"] = with_encrypted_include(extra["include"])
    else:
        request["include"] = with_encrypted_include(request.get("include"))


REASONING_CONTEXTS = {TurnPolicy.ALL_TURNS: "all_turns", TurnPolicy.CURRENT_TURN: "current_turn"}
"""`reasoning.context` (GPT-5.4+ / GPT-6 Responses: `auto`, `current_turn`, `all_turns`) for the
turn policies it can say: which earlier reasoning the model reads of what the input holds."""


def asked_reasoning_context(request: dict[str, Any]) -> str | None:
    """The `reasoning.context` the client asked for (top level or `extra_body`), if any."""
    extra = request.get("extra_body")
    for source in (request, extra if isinstance(extra, dict) else {}):
        reasoning = source.get("reasoning")
        if isinstance(reasoning, dict) and isinstance(reasoning.get("context"), str):
            return str(reasoning["context"])
    return None


def policy_for_context(policy: TurnPolicy, asked: str | None, operator: bool) -> TurnPolicy:
    """The policy of a request whose client asked for `reasoning.context` `asked`: a client that
    limits the model to the current turn's reasoning gets only that turn's restored (earlier
    items would be paid for and not read); an operator's explicit policy is never widened."""
    if asked == "current_turn" and policy is TurnPolicy.ALL_TURNS:
        return TurnPolicy.CURRENT_TURN
    if asked == "all_turns" and not operator and policy is TurnPolicy.CURRENT_TURN:
        return TurnPolicy.ALL_TURNS
    return policy


def say_reasoning_context(
    request: dict[str, Any],
    policy: TurnPolicy,
    accepted: Sequence[str],
    *,
    asked: str | None,
    whole: bool,
) -> None:
    """Set `reasoning.context` to what `policy` restores, where the model takes that value
    (`accepted`: LiteLLM's model map `reasoning_contexts`) and the client said nothing (`asked`:
    `asked_reasoning_context`): the model then reads the earlier reasoning it is sent, no more
    (`auto` is the model's own choice). `all_turns` only when the input is `whole` (no item
    lacks the reasoning it came with): with it the API refuses "Item … of type 'message' was
    provided without its required 'reasoning' item" (code_puppy#853), so a store miss would
    fail a call `auto` lets through."""
    wanted = REASONING_CONTEXTS.get(policy)
    if wanted is None or wanted not in accepted or asked is not None:
        return
    if wanted == "all_turns" and not whole:
        return
    reasoning = request.get("reasoning")
    request["reasoning"] = {**(reasoning if isinstance(reasoning, dict) else {}), "context": wanted}


def encrypted_parts(reasoning: Reasoning) -> tuple[ReasoningPart, ...]:
    """The parts the Responses API can take back: encrypted items with their content."""
    return tuple(part for part in reasoning.parts if part.kind == "encrypted" and part.data)


def issued_here(reasoning: Reasoning, provider: str | None = None) -> bool:
    """Issued by OpenAI (or by `provider`, the target's own: vLLM, xAI), or sent by the client
    itself (no issuer known). Which deployment of it issued a record is `provenance`'s."""
    return (
        reasoning.provider is None
        or reasoning.provider in RESPONSES_ISSUERS
        or (provider is not None and reasoning.provider == provider)
    )


def reasoning_input_item(part: ReasoningPart, *, with_id: bool) -> dict[str, Any]:
    """One Responses `input` reasoning item; `summary` is required even when empty."""
    item: dict[str, Any] = {"type": "reasoning"}
    if with_id and part.id:
        item["id"] = part.id
    summary = part.details.get("summary")
    item["summary"] = list(summary) if isinstance(summary, list) else []
    item["encrypted_content"] = part.data
    return item


def reasoning_input_items(parts: Iterable[ReasoningPart], *, with_id: bool) -> list[dict[str, Any]]:
    return [reasoning_input_item(part, with_id=with_id) for part in parts]


class ResponsesItemsDialect(BaseDialect):
    """LiteLLM's chat → Responses bridge (`openai/responses/<model>`): `reasoning_items` on the
    assistant message, which LiteLLM puts back as input items before the message's own items.
    Sent without `rs_` ids (see the module docstring)."""

    name: ClassVar[str] = "openai_responses"
    prefers_opaque: ClassVar[bool] = True
    input_items: ClassVar[bool] = True

    def prepare_request(self, params: dict[str, Any], model: str, policy: TurnPolicy) -> None:
        # The bridge's reply carries its reasoning back only as encrypted items, asked for.
        if policy is not TurnPolicy.NONE:
            ask_for_encrypted_content(params, model)

    def accepts(self, reasoning: Reasoning) -> bool:
        return issued_here(reasoning) and bool(encrypted_parts(reasoning))

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = strip_reasoning(message)
        if reasoning is not None and self.accepts(reasoning):
            out["reasoning_items"] = reasoning_input_items(
                encrypted_parts(reasoning), with_id=False
            )
        return out
