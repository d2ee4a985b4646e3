"""Which assistant messages keep their reasoning: the turn policy, then the provider's strip
rule and the optional reasoning budget.

Pure: indices and token counts in, indices out. `limits.py` applies the result to a rendered
request.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

StripRule = Literal["any", "leading_run"]
STRIP_RULES: tuple[StripRule, ...] = ("any", "leading_run")
"""`any`: a request may leave out any earlier reasoning. `leading_run`: only the oldest blocks,
as one leading run (Claude Fable 5.1+ / Opus 5.5: each thinking block is bound to everything
before it; "Removing a thinking block from anywhere other than the start of the run invalidates
every thinking block after it", provider rules §1)."""


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
        """Whether the assistant chat `message` at `index` carries its reasoning."""
        return self.keeps_at(index, turn_start, calls_tools=bool(message.get("tool_calls")))

    def keeps_at(self, index: int, turn_start: int, *, calls_tools: bool) -> bool:
        """Whether an assistant message at `index` carries its reasoning (`calls_tools`: it
        holds tool calls), whatever its format."""
        if self is TurnPolicy.NONE:
            return False
        if self is TurnPolicy.ALL_TURNS or index > turn_start:
            return True
        return self is TurnPolicy.TOOL_CALLS_ALL_TURNS and calls_tools

    def keep_bounds(self, turn_start: int, count: int) -> tuple[int, bool]:
        """`keeps_at` for the messages of a history of `count`, as `(after, tools)`: an
        assistant message at `index` keeps its reasoning when `index > after`, or when `tools`
        and it holds tool calls (what the accelerator's loop is given)."""
        if self is TurnPolicy.NONE:
            return count, False
        if self is TurnPolicy.ALL_TURNS:
            return -1, False
        return turn_start, self is TurnPolicy.TOOL_CALLS_ALL_TURNS

    @property
    def earlier_turns_required(self) -> bool:
        """Whether the earlier turns this policy keeps are required by the provider (a 400
        without them), so a budget may not drop them. Only Kimi's rule is: DeepSeek V4 with
        tools accepts an empty `reasoning_content` (its dialect sends one), and the others
        keep earlier reasoning for quality and caching, not validity."""
        return self is TurnPolicy.TOOL_CALLS_ALL_TURNS


def leading_run_violations(kept: Sequence[int], left_out: Collection[int]) -> list[int]:
    """Kept indices that must be left out too so that what is left out is a leading run.

    `left_out` are messages whose reasoning existed in the conversation but is not sent
    (stripped by the policy, dropped by the budget). Every kept message before the last of
    them would follow a removed block: it is left out as well, so the request drops the oldest
    blocks only. The current turn is never affected: policies and budgets leave out only
    earlier turns, and the messages after the last left-out one are all kept.
    """
    if not left_out:
        return []
    last = max(left_out)
    return [index for index in kept if index < last]


def over_budget(
    kept: Sequence[int],
    tokens: Mapping[int, int],
    max_tokens: int,
    droppable: Collection[int],
) -> list[int]:
    """The oldest `droppable` kept indices to leave out so that the reasoning sent fits in
    `max_tokens` (as far as dropping allowed messages can make it fit).

    `tokens` holds each kept message's reasoning tokens (estimated). Oldest first: the most
    recent reasoning matters most to the model, and for bound providers only a leading run
    may go. The amount dropped is rounded up to steps of half the budget, so that in a growing
    conversation the cut moves once per half-budget of new reasoning, not on every request:
    between two moves each request extends the previous one byte for byte (prompt cache).
    The cut depends only on the history, so a resent history is cut the same way.
    """
    total = sum(tokens.get(index, 0) for index in kept)
    if total <= max_tokens:
        return []
    step = max(1, max_tokens // 2)
    target = -(-(total - max_tokens) // step) * step
    dropped: list[int] = []
    removed = 0
    for index in sorted(kept):
        if removed >= target:
            break
        if index not in droppable:
            continue
        dropped.append(index)
        removed += tokens.get(index, 0)
    return dropped


CLEAR_THINKING_EDIT = "clear_thinking_20251015"


def template_keeps_thinking(params: Sequence[Any]) -> bool:
    """Whether the request asks an open-weight model's chat template to keep earlier turns'
    thinking: `chat_template_kwargs: {"preserve_thinking": true}` (Qwen3.6+) or
    `{"clear_thinking": false}` (GLM) on vLLM, SGLang, Together and other OpenAI-compatible
    servers. Then every turn's reasoning goes back (stripping it would re-prefill the history
    on every request)."""
    for p in params:
        kwargs = p.get("chat_template_kwargs") if isinstance(p, dict) else None
        if isinstance(kwargs, dict) and (
            kwargs.get("preserve_thinking") is True or kwargs.get("clear_thinking") is False
        ):
            return True
    return False


def provider_manages_thinking(params: Sequence[Any]) -> bool:
    """Whether the request (its keyword dicts) asks the provider to decide which earlier
    thinking it keeps: Z.ai `thinking: {"clear_thinking": false}` (keep every turn's, unmodified),
    Kimi `thinking: {"keep": "all"}` (Preserved Thinking: every historical message's, as-is),
    Fireworks `reasoning_history: "preserved"`, or Claude context editing `context_management:
    {"edits": [{"type": "clear_thinking_20251015", ...}]}` (the API clears server-side; the
    client keeps the full history). Either way every turn's reasoning is sent, byte-stable, and
    the provider trims."""
    for p in params:
        if not isinstance(p, dict):
            continue
        thinking = p.get("thinking")
        if isinstance(thinking, dict) and (
            thinking.get("clear_thinking") is False or thinking.get("keep") == "all"
        ):
            return True
        if p.get("reasoning_history") == "preserved":
            return True
        management = p.get("context_management")
        edits = management.get("edits") if isinstance(management, dict) else management
        if isinstance(edits, list) and any(
            isinstance(edit, dict) and edit.get("type") == CLEAR_THINKING_EDIT for edit in edits
        ):
            return True
    return False
