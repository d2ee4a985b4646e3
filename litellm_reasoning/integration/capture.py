"""The reply side: a call's reply read into records (by the provider adapters' readers) and
stored under the keys its assistant message will have when the client sends it back."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core import identity
from ..core.extract import reasoning_from_message
from ..core.reasoning import Reasoning
from ..core.render import reply_needed_next
from ..core.usage import prompt_cache_of
from ..wire import CallParts, adapter_for, complete_message
from . import items_format as responses
from .calls import CallState, Capture
from .fallback import Contained
from .flows import Flow, Write
from .kwargs import as_dict
from .streams import OneMessage, may_capture, responses_output, stream_chunks

if TYPE_CHECKING:
    from .engine import Engine

logger = logging.getLogger("litellm_reasoning")

_REDACTED = "redacted-by-litellm"


def capture(
    engine: Engine, state: CallState | None, response: Any, source: Any = None
) -> Flow[None]:
    """Store the reasoning of `response`, once per call. `source`: the reply's stream chunks,
    or LiteLLM's logging details holding the raw body (where Claude's block order is read)."""
    if state is None:
        return
    if not may_capture(state, response):
        state.claim(engine)  # a stream cut before its finish: never kept, and nothing to wait for
        engine.pending.close(state.id)
        return
    call = state.claim(engine)
    if call is None:
        # Captured already, or being captured by another hook of this call, which closes the
        # pending capture once its record is written: closing it here would let a request
        # waiting for that record stop waiting before it exists.
        return
    try:
        with Contained(engine.report.fail, "capturing the reply's reasoning"):
            engine.report.prompt_cache(
                state, prompt_cache_of(as_dict(getattr(response, "usage", None)))
            )
            records = _records_of(engine, state, call, response, source)
            if records:
                yield Write(call.scope, records, _needed_next(state, call, response))
                engine.report.stats["captured"] += primary(records)
    finally:
        engine.pending.close(state.id)


def _needed_next(state: CallState, call: Capture, response: Any) -> bool:
    """Whether the next request of the loop is refused without this reply's records (so the
    write may take the store's longer deadline): by its target's rule, or a Responses reply
    whose function calls go back with their item ids (`input_items.refused_without`)."""
    target = state.rendered_for
    if target is not None and reply_needed_next(target.dialect, target.policy):
        return True
    output = responses_output(response) if call.responses_input else None
    return output is not None and responses.reply_needs_reasoning(output)


def _records_of(
    engine: Engine, state: CallState, call: Capture, response: Any, source: Any
) -> dict[str, Reasoning]:
    if call.continues_prefill:
        logger.debug("litellm-reasoning: a reply continuing an assistant prefill is not kept")
        return {}
    adapter = adapter_for(call.provider)
    chunks = source if isinstance(source, list) else None
    if chunks is None and adapter.reads_stream:
        chunks = stream_chunks(state)
    read = adapter.read_reply(response, source, chunks)
    _report_transformations(engine, state, list(read.transformations))
    found = records(engine, call, response, state, read.layout)
    if call.origin is not None:
        found = {
            key: dataclasses.replace(record, origin=call.origin, deployment=call.deployment)
            for key, record in found.items()
        }
    return found


def _report_transformations(engine: Engine, state: CallState, found: list[dict[str, Any]]) -> None:
    """The provider's `input_transformations` (blocks of the request the API dropped or let through
    silently): into the request's decisions summary, counted, logged at DEBUG."""
    if not found:
        return
    engine.report.stats["input_transformations"] += len(found)
    if state.reported is not None:
        state.reported["input_transformations"] = found
    logger.debug(
        "litellm-reasoning: the provider transformed %d block(s) of the request: %s",
        len(found),
        found,
    )


def records(
    engine: Engine,
    call: Capture,
    response: Any,
    parts: CallParts | None = None,
    layout: tuple[str, ...] = (),
) -> dict[str, Reasoning]:
    """Store key -> record of each choice of a chat (or Responses) reply (`parts`: the call's
    state, where adapters kept what LiteLLM's assembly of a stream lost)."""
    output = responses_output(response)
    if output is None and call.responses_input:
        # LiteLLM's bridge rendered through the Responses hook (sync calls): its chat reply.
        choices = getattr(response, "choices", None) or [None]
        message = as_dict(getattr(choices[0], "message", None))
        output = responses.output_of_chat(message) if message else None
    if output is not None:
        return _responses_records(engine, call, output)
    out: dict[str, Reasoning] = {}
    # The model that answered names the record: with Anthropic's `fallbacks` it is not the
    # one asked for.
    answered = getattr(response, "model", None)
    model = answered if isinstance(answered, str) and answered else call.model
    for number, choice in enumerate(getattr(response, "choices", None) or ()):
        message = as_dict(getattr(choice, "message", None))
        if message is None:
            continue
        if parts is not None:
            complete_message(message, choice, number, parts)
        reasoning = reasoning_from_message(message, provider=call.provider, model=model)
        if reasoning is not None:
            reasoning = sendable(reasoning)
        if reasoning is not None and layout and number == 0:
            calls = message.get("tool_calls") or ()
            if layout.count("r") == len(reasoning.parts) and layout.count("u") == len(calls):
                reasoning = dataclasses.replace(reasoning, layout=layout)
        if reasoning is None or reasoning.is_empty:
            continue
        if reasoning.text == _REDACTED:
            engine.report.fail(
                "capture", RuntimeError("LiteLLM redacted the reply (turn_off_message_logging)")
            )
            continue
        message.setdefault("role", "assistant")
        shape = identity.canonical(message)
        digest = identity.chain(call.digest, shape)
        key = identity.message_key(call.scope, message, digest, shape, call.anchor)
        placed = identity.has_tool_call_ids(message)
        # A tool-call key two conversations can share: the record says whose it is.
        out[key] = dataclasses.replace(reasoning, conversation=call.digest) if placed else reasoning
        previous = (
            identity.previous_tool_call_keys(call.scope, message, shape, call.anchor)
            if engine.legacy_keys_on and placed
            else None
        )
        if previous is not None:  # for replicas still on the previous release (0.2.0, 0.3.0)
            out[previous[0]] = dataclasses.replace(reasoning, superseded=True)
    return out


def _responses_records(
    engine: Engine, call: Capture, output: list[dict[str, Any]]
) -> dict[str, Reasoning]:
    if call.responses_input:
        return responses.reply_records(call, output)
    # The chat bridge: keyed as the assistant chat message LiteLLM made of the reply.
    return records(engine, call, OneMessage(responses.chat_message_of(output)))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def sendable(reasoning: Reasoning) -> Reasoning | None:
    """`reasoning` as it can go back on the wire. A lone UTF-16 surrogate (an emoji LiteLLM
    split across two stream chunks) is valid JSON but no HTTP client can send it: in plain
    text it becomes U+FFFD; signed text cannot change, so such a record is not kept."""
    if not any(_LONE_SURROGATE.search(part.text) for part in reasoning.parts):
        return reasoning
    if any(part.signature for part in reasoning.parts if _LONE_SURROGATE.search(part.text)):
        logger.warning(
            "litellm-reasoning: a signed reasoning block holds a broken character (a lone "
            "surrogate); it cannot be sent back and is not kept"
        )
        return None
    parts = tuple(
        dataclasses.replace(part, text=_LONE_SURROGATE.sub("\ufffd", part.text))
        for part in reasoning.parts
    )
    return dataclasses.replace(reasoning, parts=parts)


def primary(found: Mapping[str, Reasoning]) -> int:
    """How many of `found` are this release's own records (not copies for older replicas)."""
    return sum(not record.superseded for record in found.values())
