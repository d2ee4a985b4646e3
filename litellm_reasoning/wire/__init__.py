"""Dialects by name: how a target wants reasoning on the messages it is sent."""

from __future__ import annotations

from ..core.dialect import DIALECT_NAMES, REASONING_KEYS, Dialect, strip_reasoning
from .anthropic.dialect import (
    AnthropicAsIssuedDialect,
    AnthropicDialect,
    BedrockClaudeDialect,
    VertexClaudeDialect,
)
from .gemini import GeminiDialect, VertexGeminiDialect
from .minimax import MinimaxDialect
from .mistral import MistralDialect
from .no_reasoning import NoReasoningDialect, PassthroughDialect
from .ollama import OllamaChatDialect
from .openai_chat import (
    ReasoningContentDialect,
    ReasoningContentRequiredDialect,
    ReasoningFieldDialect,
)
from .openai_responses.dialect import ResponsesItemsDialect
from .openrouter.dialect import (
    OpenRouterAnthropicDialect,
    OpenRouterDialect,
    OpenRouterGoogleDialect,
    OpenRouterOpenAIDialect,
)

_DIALECTS: dict[str, Dialect] = {
    dialect.name: dialect
    for dialect in (
        ReasoningContentDialect(),
        ReasoningContentRequiredDialect(),
        ReasoningFieldDialect(),
        NoReasoningDialect(),
        PassthroughDialect(),
        AnthropicDialect(),
        AnthropicAsIssuedDialect(),
        BedrockClaudeDialect(),
        VertexClaudeDialect(),
        GeminiDialect(),
        VertexGeminiDialect(),
        ResponsesItemsDialect(),
        OllamaChatDialect(),
        MistralDialect(),
        MinimaxDialect(),
        OpenRouterDialect(),
        OpenRouterAnthropicDialect(),
        OpenRouterOpenAIDialect(),
        OpenRouterGoogleDialect(),
    )
}


if set(_DIALECTS) != DIALECT_NAMES:  # the core's list of names is this registry's
    raise RuntimeError(f"dialect names out of step: {sorted(set(_DIALECTS) ^ DIALECT_NAMES)}")


def get_dialect(name: str) -> Dialect:
    """The dialect called `name`; a clear error lists the known ones."""
    try:
        return _DIALECTS[name]
    except KeyError:
        raise ValueError(
            f"unknown dialect {name!r}; known: {', '.join(sorted(_DIALECTS))}"
        ) from None


def dialect_names() -> list[str]:
    return sorted(_DIALECTS)


__all__ = ["REASONING_KEYS", "Dialect", "dialect_names", "get_dialect", "strip_reasoning"]
