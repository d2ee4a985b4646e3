"""Chat messages (`completion` / `acompletion`) after routing, as an entry point of the
pipeline (`format_flow.Entry`): the chat format (`chat_messages.ChatMessages`) on the messages
as the client sent them (its deliveries marked where the call is LiteLLM's translation of an
Anthropic-format request), then what LiteLLM's translation of this deployment needs settled
(`sync_body.settle`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.formats.blocks import TranslatedTurns
from . import sync_body
from .calls import CallState
from .chat_messages import CHAT, ChatMessages
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
        if turns is None:
            return Begun(CHAT, items)
        # The chat call LiteLLM's adapter makes of an Anthropic-format request: its user
        # messages marked as the Anthropic-format request had them.
        return Begun(ChatMessages(delivery_starts=turns.starts), items)

    def after_pipeline(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        begun: Begun,
        done: Done | None,
        state: CallState,
    ) -> None:
        assert done is not None  # the chat format renders every request
        dialect = done.target.dialect  # the records may have changed it
        kwargs["messages"] = sync_body.settle(engine, state, dialect, done.items, [kwargs], kwargs)
        dialect.prepare_request(kwargs, str(kwargs.get("model") or ""), done.target.policy)


ENTRY = ChatEntry()
