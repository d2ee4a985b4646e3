"""The turn rule: where the current turn starts.

The current turn starts at the last user message that starts a turn. A user message whose
`turn` is the boolean `false` is a delivery at a step boundary (a background job's note, a team
message, words added to a running turn) and starts none. Anything else — absent, `true`, or a
value of the wrong type — starts one: a wrong-typed flag errs toward a new turn, which can only
send less reasoning, never another turn's. One rule for every conversation format: a user
message holding `tool_result` blocks (the Anthropic format's tool results, which chat sends as
`tool` messages) answers the tool loop and starts none either.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

TURN_KEY = "turn"
"""The client-side flag. It never reaches a provider."""


def starts_turn(message: Any) -> bool:
    """Whether `message` (a chat message, a Responses input item or an Anthropic-format message)
    opens a new turn: a user message (for items: of type `message`, or of no type) not flagged
    `turn: false` and holding no `tool_result` block."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    if message.get("type", "message") != "message":
        return False
    if message.get(TURN_KEY, True) is False:
        return False
    content = message.get("content")
    return not (
        type(content) is list
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def current_turn_start(
    messages: Sequence[Any], among: Sequence[Sequence[int]] | None = None
) -> int:
    """Index of the message that starts the current turn, or -1 when none does.

    With -1 every message belongs to the current turn (a history that no user message opened).
    `among`: lists of indices, each ascending, that together hold every user message dict (a
    walk's user messages): only those are asked, so a long tool loop after one user message
    costs a step, not a pass over the history.
    """
    if among is None:
        for index in range(len(messages) - 1, -1, -1):
            if starts_turn(messages[index]):
                return index
        return -1
    start = -1
    for indices in among:
        for index in reversed(indices):
            if index <= start:
                break
            if starts_turn(messages[index]):
                start = index
                break
    return start


def without_turn(items: Sequence[Any], marked: Iterable[int] | None = None) -> list[Any]:
    """`items` with `turn` removed from each that has it (the others as they are). `marked`:
    the indices of the items that may carry it (the accelerator's `turn_marked`), the only
    ones asked; None: every item is."""
    if marked is None:
        return [item_without_turn(item) for item in items]
    out = list(items)
    for index in marked:
        out[index] = item_without_turn(items[index])
    return out


def item_without_turn(item: Any) -> Any:
    """`item` without `turn`: a dict copy without the key (also inside its content parts and
    tool calls, where it means nothing and no provider takes it), or, for a pydantic message
    object carrying `turn` as an extra field (LiteLLM's `Message`), its dict without it."""
    if isinstance(item, dict):
        nested = _nested_turn(item)
        if TURN_KEY not in item and not nested:
            return item
        out = {k: v for k, v in item.items() if k != TURN_KEY}
        if nested:
            for name in _NESTED:
                value = out.get(name)
                if type(value) is list:
                    out[name] = [_part_without_turn(part) for part in value]
        return out
    if getattr(item, TURN_KEY, None) is None and TURN_KEY not in (
        getattr(item, "model_extra", None) or {}
    ):
        return item
    dump = getattr(item, "model_dump", None)
    as_mapping = dump() if callable(dump) else None
    if not isinstance(as_mapping, dict):
        return item
    return {k: v for k, v in as_mapping.items() if k != TURN_KEY}


_NESTED = ("content", "tool_calls")
"""The lists of a message whose items may carry a stray `turn`."""


def carries_turn(message: dict[str, Any]) -> bool:
    """Whether `item_without_turn` has anything to take out of `message`."""
    return TURN_KEY in message or _nested_turn(message)


def _nested_turn(item: dict[str, Any]) -> bool:
    for name in _NESTED:
        value = item.get(name)
        if type(value) is list:
            for part in value:
                if type(part) is dict and (
                    TURN_KEY in part
                    or (type(function := part.get("function")) is dict and TURN_KEY in function)
                ):
                    return True
    return False


def _part_without_turn(part: Any) -> Any:
    if type(part) is not dict:
        return part
    out = {k: v for k, v in part.items() if k != TURN_KEY}
    function = out.get("function")
    if type(function) is dict and TURN_KEY in function:
        out["function"] = {k: v for k, v in function.items() if k != TURN_KEY}
    return out


def mark_deliveries(messages: Sequence[Any], starts: Sequence[bool]) -> list[Any] | None:
    """`messages` (chat format) with `"turn": false` on each user message whose entry in
    `starts` (one per user message, in order) says it starts no turn: what a translation from
    another format lost (LiteLLM's Anthropic-to-chat adapter drops `turn`, and turns a
    `tool_result` with text beside it into tool messages and a user message). None when the
    user messages do not line up with `starts` (then nothing is marked)."""
    users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
    if len(users) != len(starts):
        return None
    out = list(messages)
    for index, starts_one in zip(users, starts, strict=True):
        if not starts_one and out[index].get(TURN_KEY) is not False:
            out[index] = {**out[index], TURN_KEY: False}
    return out
