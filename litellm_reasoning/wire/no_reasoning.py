"""Targets that accept no reasoning at all: official OpenAI chat models, and servers known to
reject unknown message fields (Groq, xAI chat)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.reasoning import Reasoning
from ._base import BaseDialect, strip_reasoning


class NoReasoningDialect(BaseDialect):
    """Every reasoning field removed from every assistant message."""

    name: ClassVar[str] = "no_reasoning"
    accepts_reasoning: ClassVar[bool] = False

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        return strip_reasoning(message)


class PassthroughDialect(BaseDialect):
    """Targets this package has no rules for yet: assistant messages go exactly as the client
    sent them (only `turn` is removed), so registering the callback never changes them."""

    name: ClassVar[str] = "passthrough"
    passthrough: ClassVar[bool] = True

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        return message
