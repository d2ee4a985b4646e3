"""Chat messages (`completion` / `acompletion`) after routing, as an entry point of the
pipeline (`format_flow.Entry`): the chat format (`chat_messages.ChatMessages`) on the messages
as the client sent them (its deliveries marked where the call is LiteLLM's translation of an
Anthropic-format request), then what LiteLLM's translation of this deployment needs settled
(`sync_body.settle`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.formats.blocks import TranslatedTurns
from ..core.turns import mark_deliveries
from ..wire import get_dialect
from . import sync_body
from .calls import CallState
from .chat_messages import CHAT
from .format_flow import Begun, Done
from .kwargs import COMPLETION_CALL_TYPES

if TYPE_CHECKING:
    from .engine import Engine
    from .kwargs import CallFacts


class ChatEntry:
    call_types = COMPLETION_CALL_TYPES
    field = "messages"
    doing = "rendering the request"
    starts_early = True
    blocks_body = False

    def begin(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        facts: CallFacts,
        items: list[Any],
        previous: CallState | None,
        state: CallState | None,
    ) -> Begun:
        turns = previous.peek(TranslatedTurns) if previous is not None else None
        if turns is not None:
            # The chat call LiteLLM's adapter makes of an Anthropic-format request.
            marked = mark_deliveries(items, turns.starts)
            items = marked if marked is not None else items

        def after_pipeline(done: Done | None, state: CallState) -> None:
            assert done is not None  # the chat format renders every request
            target = done.target  # the records may have changed its dialect
            get_dialect(target.dialect).prepare_request(
                kwargs, str(kwargs.get("model") or ""), target.policy
            )
            kwargs["messages"] = sync_body.settle(
                engine, state, target.dialect, done.items, [kwargs], kwargs
            )

        return Begun(CHAT, items, after_pipeline)


ENTRY = ChatEntry()
