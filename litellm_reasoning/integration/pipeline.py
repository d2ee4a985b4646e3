"""Where a deployment hook's call enters the one request pipeline (`Engine.run`): by its call
type, the entry point (`format_flow.Entry`) and its conversation format:

* chat messages (`completion` / `acompletion`): `chat_format` (`chat_messages.ChatMessages`);
* block messages (`/v1/messages`, Claude Code and the Anthropic SDKs): `blocks_format`
  (`BlockMessages`);
* input items (`responses` / `aresponses`): `items_format` (`ResponsesInput`).

`dispatch` does what every entry point shares: the call's logging details and state, the
fallback, the call's facts, the entry's decision, the pipeline (`format_flow`: the format's
plan (the target, what identifies each item and which carry reasoning under the policy) -> one
store read (`Engine.read`) -> the format's render and limits -> `Engine.record`), and what the
entry settles after it (`Entry.after_pipeline`). Whatever fails on the way,
`fallback.let_through` lets the request through as the client sent it, less `turn`. The sync
path (`log_pre_api_call`) runs the chat format on the provider body (`sync_body`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.turns import without_turn
from . import blocks_format, chat_format, items_format
from .calls import details_of, start_attempt, state_in
from .fallback import let_through
from .flows import adrive
from .format_flow import Entry

if TYPE_CHECKING:
    from .engine import Engine

ENTRIES: dict[str, Entry] = {
    kind: entry
    for entry in (chat_format.ENTRY, items_format.ENTRY, blocks_format.ENTRY)
    for kind in entry.call_types
}
"""Call type -> its entry point. A call of any other type never reaches the pipeline: the
proxy's pre-call hook takes its `turn` out before routing."""


async def dispatch(engine: Engine, kwargs: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The deployment hook of a call of type `kind`: its request rendered through its entry
    point (None: not a call the callback renders). The engine is entered once, to run the
    pipeline; a failure anywhere lets the request through (`fallback.let_through`)."""
    entry = ENTRIES.get(kind)
    items = kwargs.get(entry.field) if entry is not None else None
    if entry is None or not isinstance(items, list):
        return None
    details = details_of(kwargs)
    previous = state_in(details)
    state = start_attempt(details, engine, engine.pending) if entry.starts_early else None
    if state is not None and entry.blocks_body:
        state.handled = state.messages_format = True
    try:
        facts = engine.facts_of(kwargs)
        begun = entry.begin(engine, kwargs, facts, items, previous, state)
        if begun is not None:
            if state is None:
                state = start_attempt(details, engine, engine.pending)
            done = await adrive(engine.store, engine.run(begun.format, facts, begun.items, state))
            entry.after_pipeline(engine, kwargs, begun, done, state)
            return kwargs
    except Exception as exc:
        let_through(engine.report, entry.doing, exc, kwargs, entry.field, items, state)
        return kwargs
    kwargs[entry.field] = without_turn(items)  # not rendered here: only `turn` comes out
    return kwargs
