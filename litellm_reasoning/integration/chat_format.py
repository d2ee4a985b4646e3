"""Chat messages (`completion` / `acompletion`) after routing: the pipeline with the chat
format (`Engine.arender`: `chat_messages.ChatMessages`), then what LiteLLM's translation of
this deployment needs settled (`sync_body.settle`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.formats.blocks import TranslatedTurns
from ..core.turns import mark_deliveries
from ..wire import get_dialect
from . import sync_body
from .calls import details_of, state_in
from .fallback import fail_open

if TYPE_CHECKING:
    from .engine import Engine


async def render_chat(engine: Engine, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The chat request of this attempt, rendered for the deployment it hits."""
    messages = kwargs.get("messages")
    if not isinstance(messages, list):
        return None
    details = details_of(kwargs)
    translated = state_in(details)
    state = engine.start(details)
    with fail_open(engine.report, "rendering the request", kwargs, "messages", state):
        turns = translated.peek(TranslatedTurns) if translated is not None else None
        if turns is not None:
            # The chat call LiteLLM's adapter makes of an Anthropic-format request.
            marked = mark_deliveries(messages, turns.starts)
            messages = marked if marked is not None else messages
        rendered, target = await engine.arender(engine.facts_of(kwargs), messages, state)
        get_dialect(target.dialect).prepare_request(
            kwargs, str(kwargs.get("model") or ""), target.policy
        )
        kwargs["messages"] = sync_body.settle(
            engine, state, target.dialect, rendered.messages, [kwargs], kwargs
        )
    return kwargs
