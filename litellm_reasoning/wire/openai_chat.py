"""OpenAI-compatible chat servers that read reasoning text back from a message field.

DeepSeek, Kimi/Moonshot, Qwen/DashScope, Z.ai GLM, SGLang, LM Studio read `reasoning_content`;
vLLM (since it renamed the field) and Cerebras read `reasoning`. Text only: no signatures.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.reasoning import Reasoning
from ._base import BaseDialect, strip_reasoning


class ReasoningContentDialect(BaseDialect):
    """`reasoning_content` on the assistant message, when the reasoning is not empty."""

    name: ClassVar[str] = "openai_chat"
    field: ClassVar[str] = "reasoning_content"

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = strip_reasoning(message)
        text = reasoning.text if reasoning is not None else ""
        if text:
            out[self.field] = text
        return out

    def plain_fields(self, reasoning: Reasoning | None) -> dict[str, Any] | None:
        text = reasoning.text if reasoning is not None else ""
        return {self.field: text} if text else {}


class ReasoningFieldDialect(ReasoningContentDialect):
    """`reasoning` on the assistant message (vLLM ≥ 0.11, Cerebras)."""

    name: ClassVar[str] = "openai_chat_reasoning"
    field: ClassVar[str] = "reasoning"


class ReasoningContentRequiredDialect(ReasoningContentDialect):
    """`reasoning_content` on every kept assistant message, an empty string when it has none.

    DeepSeek V4 with tools answers 400 "Missing `reasoning_content` field in the assistant
    message at message index N" when the field is absent; an empty one passes.
    """

    name: ClassVar[str] = "openai_chat_required"
    requires_reasoning: ClassVar[bool] = True

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = strip_reasoning(message)
        out[self.field] = reasoning.text if reasoning is not None else ""
        return out

    def plain_fields(self, reasoning: Reasoning | None) -> dict[str, Any] | None:
        return {self.field: reasoning.text if reasoning is not None else ""}
