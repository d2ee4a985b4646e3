"""Where a deployment hook's call enters the one request pipeline (`Engine.run`), by its
conversation format (`dispatch`):

* chat messages (`completion` / `acompletion`): `chat_format` (`chat_messages.ChatMessages`);
* block messages (`/v1/messages`, Claude Code and the Anthropic SDKs): `blocks_format`
  (`BlockMessages`);
* input items (`responses` / `aresponses`): `items_format` (`ResponsesInput`).

Each entry decides whether the call is rendered here at all and starts its state; the pipeline
is then the same for all three (`format_flow`): the format's plan (the target, what identifies
each item and which carry reasoning under the policy) -> one store read (`Engine.read`: the
budget's unread decision, the lookup, the refused left out) -> the format's render and limits
-> `Engine.record` (the capture opened, the counts, the decisions summary). Whatever fails on
the way, `fallback.fail_open` lets the request through as the client sent it, less `turn`.
The sync path (`log_pre_api_call`) runs the chat format on the provider body (`sync_body`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import blocks_format, chat_format, items_format
from .kwargs import COMPLETION_CALL_TYPES, MESSAGES_CALL_TYPES, RESPONSES_CALL_TYPES

if TYPE_CHECKING:
    from .engine import Engine


async def dispatch(engine: Engine, kwargs: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The deployment hook of a call of type `kind`: its request rendered by its format's flow
    (None: not a call the callback renders)."""
    if kind in COMPLETION_CALL_TYPES:
        return await chat_format.render_chat(engine, kwargs)
    if kind in RESPONSES_CALL_TYPES:
        return await items_format.render_items(engine, kwargs)
    if kind in MESSAGES_CALL_TYPES:
        return await blocks_format.render_blocks(engine, kwargs)
    return None
