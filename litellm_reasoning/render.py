"""Render a history for one target: the turn rule, the policy and the dialect, applied once.

Pure. The caller (the callback) looks up stored reasoning for the indices `plan` names and hands
it to `render`, which never mutates its input: changed messages are new dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .dialects import Dialect
from .extract import reasoning_from_message
from .policy import TurnPolicy
from .turns import TURN_KEY, current_turn_start
from .types import Reasoning


@dataclass(slots=True)
class Rendered:
    """The messages for the wire and what happened to each assistant message's reasoning."""

    messages: list[Any]
    turn_start: int
    kept: list[int] = field(default_factory=list)
    """Indices whose reasoning is sent."""
    restored: list[int] = field(default_factory=list)
    """Kept indices whose reasoning came from the store (the client had dropped it)."""
    stripped: list[int] = field(default_factory=list)
    """Indices whose client-sent reasoning was removed (earlier turn, or not accepted)."""
    missing: list[int] = field(default_factory=list)
    """Indices that should carry reasoning but none was sent or stored."""
    dropped: list[int] = field(default_factory=list)
    """Indices whose reasoning the target cannot take (another issuer's signature, or none)."""


def _own(message: Any) -> Reasoning | None:
    return reasoning_from_message(message) if isinstance(message, dict) else None


def own_reasonings(messages: Sequence[Any]) -> list[Reasoning | None]:
    """What each assistant message carries itself; read once, shared by `plan` and `render`."""
    return [
        _own(m) if isinstance(m, dict) and m.get("role") == "assistant" else None for m in messages
    ]


def _accepted(dialect: Dialect, reasoning: Reasoning) -> bool:
    """Dialects for signed reasoning (Claude) say which records their target can take back."""
    accepts = getattr(dialect, "accepts", None)
    return bool(accepts(reasoning)) if callable(accepts) else True


def plan(
    messages: Sequence[Any],
    dialect: Dialect,
    policy: TurnPolicy,
    owns: Sequence[Reasoning | None] | None = None,
) -> list[int]:
    """Indices of assistant messages whose reasoning should be looked up in the store.
    `owns` is `own_reasonings(messages)` when the caller has it already."""
    if not dialect.accepts_reasoning:
        policy = TurnPolicy.NONE
    if dialect.passthrough or policy is TurnPolicy.NONE:
        return []
    turn_start = current_turn_start(messages)
    wanted: list[int] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if not policy.keeps(index, message, turn_start):
            continue
        own = owns[index] if owns is not None else _own(message)
        if own is None or (dialect.prefers_opaque and not any(p.is_opaque for p in own.parts)):
            wanted.append(index)
    return wanted


def render(
    messages: Sequence[Any],
    dialect: Dialect,
    policy: TurnPolicy,
    stored: Mapping[int, Reasoning] | None = None,
    owns: Sequence[Reasoning | None] | None = None,
) -> Rendered:
    """`messages` as `dialect` wants them under `policy`, with `stored` reasoning restored."""
    stored = stored or {}
    if not dialect.accepts_reasoning:
        policy = TurnPolicy.NONE
    turn_start = current_turn_start(messages)
    result = Rendered(messages=[], turn_start=turn_start)
    for index, message in enumerate(messages):
        if isinstance(message, dict) and TURN_KEY in message:
            message = {k: v for k, v in message.items() if k != TURN_KEY}
        if (
            isinstance(message, dict)
            and message.get("role") == "assistant"
            and not dialect.passthrough
        ):
            own = owns[index] if owns is not None else _own(message)
            keep = policy.keeps(index, message, turn_start)
            reasoning: Reasoning | None = None
            if keep:
                from_store = stored.get(index)
                use_store = from_store is not None and (
                    own is None
                    or (dialect.prefers_opaque and not any(p.is_opaque for p in own.parts))
                )
                reasoning = from_store if use_store else own
                if (
                    reasoning is not None
                    and not reasoning.is_empty
                    and not _accepted(dialect, reasoning)
                ):
                    result.dropped.append(index)
                    reasoning = None
                elif reasoning is not None and not reasoning.is_empty:
                    result.kept.append(index)
                    if use_store:
                        result.restored.append(index)
                elif reasoning is None:
                    result.missing.append(index)
            elif own is not None and not own.is_empty:
                result.stripped.append(index)
            message = dialect.render(message, reasoning)
        result.messages.append(message)
    return result
