"""Ollama's native chat API (`ollama_chat/`): reasoning goes back as the message's `thinking`.

Ollama documents `thinking` on request messages ("the model's thinking process"); whether a
turn's thinking is rendered is up to the model's chat template, and the server never rejects
it (provider rules §7). LiteLLM (1.106.12 and 1.110.2) builds the native body itself and turns
a message's `reasoning_content` into `thinking`, so that is what this dialect renders; the sync
body patch, which edits the native body LiteLLM already built, writes `thinking` directly.

The generate endpoint (`ollama/`) takes one prompt string made from the messages: there is no
field reasoning could ride on, so that target gets `no_reasoning`. Pure: no LiteLLM, no I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._base import strip_reasoning
from .openai_chat import ReasoningContentDialect

WIRE_FIELD = "thinking"
"""The field on Ollama's own message (what LiteLLM writes `reasoning_content` to)."""


class OllamaChatDialect(ReasoningContentDialect):
    """`reasoning_content` for LiteLLM, which sends it as `thinking`; text only."""

    name: ClassVar[str] = "ollama_chat"
    patches_wire: ClassVar[bool] = True

    def patch_wire(self, sent: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
        """`sent` (Ollama's native message, built by LiteLLM) carrying exactly `want`'s text."""
        out = strip_reasoning(sent)
        text = want.get(self.field)
        if isinstance(text, str) and text:
            out[WIRE_FIELD] = text
        return out
