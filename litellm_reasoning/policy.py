"""Which assistant messages keep their reasoning, relative to the current turn."""

from __future__ import annotations

import enum
from typing import Any


class TurnPolicy(str, enum.Enum):
    """How far back reasoning is sent."""

    CURRENT_TURN = "current_turn"
    """Only the current turn's assistant messages (the seed rule, and the default)."""
    ALL_TURNS = "all_turns"
    """Every assistant message (providers that keep reasoning across turns)."""
    TOOL_CALLS_ALL_TURNS = "tool_calls_all_turns"
    """The current turn, plus every earlier assistant message that made tool calls
    (Kimi validates reasoning on every tool-call message of the history)."""
    NONE = "none"
    """No reasoning is ever sent."""

    def keeps(self, index: int, message: dict[str, Any], turn_start: int) -> bool:
        """Whether the assistant `message` at `index` carries its reasoning."""
        if self is TurnPolicy.NONE:
            return False
        if self is TurnPolicy.ALL_TURNS or index > turn_start:
            return True
        if self is TurnPolicy.TOOL_CALLS_ALL_TURNS:
            return bool(message.get("tool_calls"))
        return False
