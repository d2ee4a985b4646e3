"""Per-model policy: the shipped model table row by row, the policies' semantics (which turns
keep reasoning, the bound-Claude leading-run rule, the budget), each distinct policy on the wire
through real LiteLLM, and the one-line overrides (code and proxy config).

Expectations come from the provider rules (shared notes `provider-rules.md`, cited per case),
not from the code: a row that changes without its case changing fails here.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import uuid
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from conftest import register
from litellm.integrations.custom_logger import CustomLogger
from paths import REPO

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.limits import apply_limits, estimate_tokens
from litellm_reasoning.core.model_table import load_rules
from litellm_reasoning.core.policy import (
    TurnPolicy,
    leading_run_violations,
    over_budget,
    provider_manages_thinking,
)
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import render
from litellm_reasoning.core.targets import PROVIDER_RULES, resolve_target
from litellm_reasoning.settings import Settings
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.upstream import Upstream
from litellm_reasoning.wire import get_dialect

# ------------------------------------------------------------------ the table, row by row

CLEAR_THINKING = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}

# (provider, model, request has tools, provider manages thinking) -> (dialect, policy, strip)
TABLE_CASES: list[tuple[str, str, bool, bool, str, str, str]] = [
    # §5 DeepSeek V4: without tools earlier reasoning is ignored; with tools every earlier
    # assistant message must carry reasoning_content (empty passes).
    ("deepseek", "deepseek-v4-pro", False, False, "openai_chat", "current_turn", "any"),
    ("deepseek", "deepseek-v4-pro", True, False, "openai_chat_required", "all_turns", "any"),
    # The families above reached through OpenAI-compatible routes keep their own rule.
    ("openai", "deepseek-reasoner", True, False, "openai_chat_required", "all_turns", "any"),
    ("openai", "deepseek-reasoner", False, False, "openai_chat", "current_turn", "any"),
    ("custom_openai", "DeepSeek-V4", True, False, "openai_chat_required", "all_turns", "any"),
    ("openai_like", "deepseek-chat", True, False, "openai_chat_required", "all_turns", "any"),
    ("openai", "kimi-k2.5", False, False, "openai_chat", "tool_calls_all_turns", "any"),
    ("custom_openai", "moonshot-v1", False, False, "openai_chat", "tool_calls_all_turns", "any"),
    ("openai_like", "Kimi-K3", False, False, "openai_chat", "tool_calls_all_turns", "any"),
    # Xiaomi MiMo at its OpenAI-compatible api_base: its tool-call rule.
    ("openai", "mimo-v2.5-pro", True, False, "openai_chat", "tool_calls_all_turns", "any"),
    ("custom_openai", "MiMo-V2-Flash", True, False, "openai_chat", "tool_calls_all_turns", "any"),
    ("openai_like", "mimo-v2.5", False, False, "openai_chat", "tool_calls_all_turns", "any"),
    (
        "hosted_vllm",
        "deepseek-ai/DeepSeek-V4",
        True,
        False,
        "openai_chat_reasoning",
        "all_turns",
        "any",
    ),
    (
        "hosted_vllm",
        "moonshotai/Kimi-K2-Thinking",
        False,
        False,
        "openai_chat_reasoning",
        "tool_calls_all_turns",
        "any",
    ),
    ("openai", "qwen3-32b", False, False, "openai_chat", "current_turn", "any"),
    ("custom_openai", "llama-4", False, False, "openai_chat", "current_turn", "any"),
    ("openai_like", "llama-4", True, False, "openai_chat", "current_turn", "any"),
    # OpenAI itself: its chat API takes no reasoning back (an official model name behind a
    # gateway too); its Responses API through LiteLLM's chat bridge takes encrypted items.
    ("openai", "gpt-5.5", True, False, "no_reasoning", "none", "any"),
    ("openai", "responses/gpt-5.5", True, False, "openai_responses", "all_turns", "any"),
    # Bedrock's other models refuse signed reasoningContent; DeepSeek-R1 there any reasoning.
    ("bedrock", "us.amazon.nova-2-lite-v1:0", True, False, "no_reasoning", "none", "any"),
    ("bedrock", "us.deepseek.r1-v1:0", False, False, "no_reasoning", "none", "any"),
    # Fireworks serves each family under its own rule; `reasoning_history: preserved` keeps all.
    (
        "fireworks_ai",
        "accounts/fireworks/models/kimi-k3",
        True,
        False,
        "openai_chat",
        "tool_calls_all_turns",
        "any",
    ),
    (
        "fireworks_ai",
        "accounts/fireworks/models/deepseek-v4-pro",
        True,
        False,
        "openai_chat_required",
        "all_turns",
        "any",
    ),
    (
        "fireworks_ai",
        "accounts/fireworks/models/deepseek-v4-pro",
        False,
        True,
        "openai_chat",
        "all_turns",
        "any",
    ),
    (
        "fireworks_ai",
        "accounts/fireworks/models/qwen3-235b-a22b",
        False,
        False,
        "openai_chat",
        "current_turn",
        "any",
    ),
    (
        "fireworks_ai",
        "accounts/fireworks/models/glm-4p7",
        False,
        True,
        "openai_chat",
        "all_turns",
        "any",
    ),
    # Volcano Engine Ark serves Kimi, DeepSeek and GLM under each family's rule; its own
    # Doubao models have no row (no source for their rule): passed through.
    ("volcengine", "kimi-k2-5-260127", True, False, "openai_chat", "tool_calls_all_turns", "any"),
    ("volcengine", "deepseek-v3-2-251201", True, False, "openai_chat_required", "all_turns", "any"),
    ("volcengine", "deepseek-v3-2-251201", False, False, "openai_chat", "current_turn", "any"),
    ("volcengine", "glm-4-7-251222", True, False, "openai_chat", "current_turn", "any"),
    ("volcengine", "doubao-seed-1-8-251228", True, False, "passthrough", "current_turn", "any"),
    # MiniMax: every turn's details (or <think> text) go back.
    ("minimax", "MiniMax-M2.5", True, False, "minimax", "all_turns", "any"),
    ("minimax", "MiniMax-M3", True, False, "minimax", "all_turns", "any"),
    ("moonshot", "kimi-k3", True, False, "openai_chat", "tool_calls_all_turns", "any"),
    # Kimi K2.7 Code: Preserved Thinking always on; K2.6 asks for it with `thinking.keep`.
    ("moonshot", "kimi-k2.7-code", True, False, "openai_chat", "all_turns", "any"),
    ("moonshot", "kimi-k2.7-code-highspeed", False, False, "openai_chat", "all_turns", "any"),
    ("moonshot", "kimi-k2.6", True, True, "openai_chat", "all_turns", "any"),
    # Xiaomi MiMo: every tool-call message's reasoning_content.
    ("xiaomi_mimo", "mimo-v2.5-pro", True, False, "openai_chat", "tool_calls_all_turns", "any"),
    # §6 Kimi validates reasoning_content on every earlier tool-call message.
    ("moonshot", "kimi-k2-thinking", False, False, "openai_chat", "tool_calls_all_turns", "any"),
    # §11 Qwen3 template drops reasoning before the last user query.
    ("dashscope", "qwen3-max", True, False, "openai_chat", "current_turn", "any"),
    # §11 GLM: preserved thinking only with clear_thinking false.
    ("zai", "glm-4.7", False, False, "openai_chat", "current_turn", "any"),
    ("zai", "glm-4.7", False, True, "openai_chat", "all_turns", "any"),
    ("lm_studio", "qwen3-8b", False, False, "openai_chat", "current_turn", "any"),
    # §11 vLLM reads `reasoning` only; Cerebras the same field.
    ("hosted_vllm", "qwen3-32b", False, False, "openai_chat_reasoning", "current_turn", "any"),
    # vLLM's and xAI's Responses APIs: reasoning items back on every turn (vllm#57323, xAI).
    ("hosted_vllm", "responses/qwen3-32b", False, False, "openai_responses", "all_turns", "any"),
    ("xai", "responses/grok-4", False, False, "openai_responses", "all_turns", "any"),
    ("cerebras", "gpt-oss-120b", False, False, "openai_chat_reasoning", "current_turn", "any"),
    # §4 unknown fields rejected: Groq, xAI chat, Azure OpenAI chat take none back.
    ("groq", "deepseek-r1-distill-llama-70b", False, False, "no_reasoning", "none", "any"),
    ("xai", "grok-4", False, False, "no_reasoning", "none", "any"),
    ("azure", "gpt-5", False, False, "no_reasoning", "none", "any"),
    # §7 Ollama: /api/chat takes `thinking`; /api/generate is one prompt string.
    ("ollama_chat", "qwen3.6", False, False, "ollama_chat", "current_turn", "any"),
    ("ollama", "qwen3.6", False, False, "no_reasoning", "none", "any"),
    # §8 OpenRouter: reasoning_details unmodified; the upstream's own rule for the turns.
    (
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        False,
        False,
        "openrouter_anthropic",
        "current_turn",
        "any",
    ),
    ("openrouter", "openai/o3", False, False, "openrouter_openai", "current_turn", "any"),
    (
        "openrouter",
        "google/gemini-3-pro-preview",
        False,
        False,
        "openrouter_google",
        "current_turn",
        "any",
    ),
    (
        "openrouter",
        "moonshotai/kimi-k2-thinking",
        False,
        False,
        "openrouter",
        "tool_calls_all_turns",
        "any",
    ),
    ("openrouter", "deepseek/deepseek-v4-pro", True, False, "openrouter", "all_turns", "any"),
    ("openrouter", "z-ai/glm-4.6", False, False, "openrouter", "current_turn", "any"),
    # §9 Mistral: thinking chunks, nothing required.
    ("mistral", "magistral-medium-latest", False, False, "mistral", "current_turn", "any"),
    # §1 Claude Fable 5.1+ / Opus, Sonnet, Haiku 5.5: blocks bound to their prefix, kept in
    # context by default: every turn's, and only a leading run may ever be left out.
    ("anthropic", "claude-fable-5-1", True, False, "anthropic", "all_turns", "leading_run"),
    ("anthropic", "claude-mythos-5-1", False, False, "anthropic", "all_turns", "leading_run"),
    ("anthropic", "claude-fable-5-2", False, False, "anthropic", "all_turns", "leading_run"),
    ("anthropic", "claude-opus-5-5", True, False, "anthropic", "all_turns", "leading_run"),
    ("anthropic", "claude-sonnet-5-5", False, False, "anthropic", "all_turns", "leading_run"),
    ("anthropic", "claude-haiku-5-5", False, False, "anthropic", "all_turns", "leading_run"),
    # Third-party Anthropic-compatible APIs behind an `anthropic/` deployment: their rules.
    ("anthropic", "deepseek-v4-pro", True, False, "anthropic", "all_turns", "any"),
    ("anthropic", "MiniMax-M3", False, False, "anthropic", "all_turns", "any"),
    ("anthropic", "kimi-k2.6", True, False, "anthropic", "tool_calls_all_turns", "any"),
    ("anthropic", "mimo-v2.5-pro", True, False, "anthropic", "tool_calls_all_turns", "any"),
    # §1 Opus 4.5+ / Sonnet 4.6+: earlier thinking preserved by default (cacheable input).
    ("anthropic", "claude-opus-4-5-20251101", True, False, "anthropic", "all_turns", "any"),
    ("anthropic", "claude-opus-4-6", False, False, "anthropic", "all_turns", "any"),
    ("anthropic", "claude-opus-4-7", True, False, "anthropic", "all_turns", "any"),
    ("anthropic", "claude-sonnet-4-6", True, False, "anthropic", "all_turns", "any"),
    ("anthropic", "claude-opus-5", False, False, "anthropic", "all_turns", "any"),
    ("anthropic", "claude-fable-5", False, False, "anthropic", "all_turns", "any"),
    # §1 earlier models strip earlier turns themselves: the seed rule; with context editing
    # the API trims, so every turn's blocks go (the client keeps the full history).
    ("anthropic", "claude-sonnet-4-5", True, False, "anthropic", "current_turn", "any"),
    ("anthropic", "claude-sonnet-4-5-20250929", False, True, "anthropic", "all_turns", "any"),
    ("anthropic", "claude-opus-4-1-20250805", False, False, "anthropic", "current_turn", "any"),
    ("anthropic", "claude-haiku-4-5", False, False, "anthropic", "current_turn", "any"),
    ("anthropic", "claude-sonnet-4-20250514", False, False, "anthropic", "current_turn", "any"),
    # §2 Bedrock: the same Claude rules, Bedrock-signed blocks.
    (
        "bedrock",
        "us.anthropic.claude-fable-5-1-v1:0",
        False,
        False,
        "anthropic_bedrock",
        "all_turns",
        "leading_run",
    ),
    (
        "bedrock",
        "anthropic.claude-opus-4-5-20251101-v1:0",
        True,
        False,
        "anthropic_bedrock",
        "all_turns",
        "any",
    ),
    (
        "bedrock",
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
        True,
        False,
        "anthropic_bedrock",
        "current_turn",
        "any",
    ),
    (
        "bedrock",
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        False,
        True,
        "anthropic_bedrock",
        "all_turns",
        "any",
    ),
    # Vertex AI: the same Claude rules, Vertex-signed blocks.
    (
        "vertex_ai",
        "claude-opus-5-5@20260801",
        False,
        False,
        "anthropic_vertex",
        "all_turns",
        "leading_run",
    ),
    ("vertex_ai", "claude-opus-4-6@20260101", False, False, "anthropic_vertex", "all_turns", "any"),
    (
        "vertex_ai",
        "claude-sonnet-4-5@20250929",
        False,
        False,
        "anthropic_vertex",
        "current_turn",
        "any",
    ),
    # §3 Gemini 3.5+: earlier thinking preserved, all or none; earlier: current turn validated.
    ("gemini", "gemini-3.5-flash", True, False, "gemini", "all_turns", "any"),
    # 2026 names: Gemini 3.6 / 3.7 / 4 keep every turn's signatures as 3.5 does.
    ("gemini", "gemini-3.6-pro", True, False, "gemini", "all_turns", "any"),
    ("gemini", "gemini-3.7-flash", False, False, "gemini", "all_turns", "any"),
    ("gemini", "gemini-4-pro-preview", True, False, "gemini", "all_turns", "any"),
    ("gemini", "gemini-3-pro-preview", True, False, "gemini", "current_turn", "any"),
    ("vertex_ai", "gemini-3.5-flash", False, False, "gemini_vertex", "all_turns", "any"),
    ("vertex_ai", "gemini-2.5-pro", False, False, "gemini_vertex", "current_turn", "any"),
]


API_BASE_CASES = [
    # Z.ai's Coding Plan endpoint keeps earlier thinking by default: every turn's.
    ("zai", "glm-5.3", "https://api.z.ai/api/coding/paas/v4", True, "openai_chat", "all_turns"),
    ("zai", "glm-5.3", "https://api.z.ai/api/paas/v4", True, "openai_chat", "current_turn"),
    # `openai/` on OpenAI's own endpoint (or none: LiteLLM's default) is OpenAI itself.
    ("openai", "deepseek-v4", "https://api.openai.com/v1", True, "no_reasoning", "none"),
    ("openai", "deepseek-v4", None, True, "no_reasoning", "none"),
]
"""(provider, model, api_base, tools, dialect, policy): rows that depend on the endpoint."""


@pytest.mark.parametrize(
    ("provider", "model", "api_base", "tools", "dialect", "policy"), API_BASE_CASES
)
def test_rows_for_an_endpoint(
    provider: str, model: str, api_base: str | None, tools: bool, dialect: str, policy: str
) -> None:
    target = resolve_target(provider, model, api_base, has_tools=tools, dialect_of=get_dialect)
    assert (target.dialect.name, target.policy.value) == (dialect, policy)


def _table_api_base(provider: str) -> str | None:
    """The endpoint TABLE_CASES are resolved at: `openai/` without an api_base is OpenAI
    itself; the family rows are for other servers."""
    return "http://127.0.0.1:8000/v1" if provider == "openai" else None


def _row_index(provider: str, model: str, api_base: str | None = None) -> int | None:
    return next(
        (i for i, rule in enumerate(PROVIDER_RULES) if rule.applies_to(provider, model, api_base)),
        None,
    )


@pytest.mark.parametrize(
    ("provider", "model", "tools", "managed", "dialect", "policy", "strip"),
    TABLE_CASES,
    ids=[
        f"{c[0]}/{c[1]}{'+tools' if c[2] else ''}{'+managed' if c[3] else ''}" for c in TABLE_CASES
    ],
)
def test_each_row_gives_the_rule(
    provider: str, model: str, tools: bool, managed: bool, dialect: str, policy: str, strip: str
) -> None:
    target = resolve_target(
        provider,
        model,
        _table_api_base(provider),
        has_tools=tools,
        preserved_thinking=managed,
        dialect_of=get_dialect,
    )
    assert (target.dialect.name, target.policy.value, target.strip) == (dialect, policy, strip)


def test_every_row_has_a_case() -> None:
    """A new row without a case here fails: each row's behaviour is pinned by the rules."""
    hit = {_row_index(p, model, _table_api_base(p)) for p, model, *_ in TABLE_CASES}
    hit |= {_row_index(provider, model, base) for provider, model, base, *_ in API_BASE_CASES}
    missing = [
        f"{rule.provider} {rule.models or ''}".strip()
        for i, rule in enumerate(PROVIDER_RULES)
        if i not in hit
    ]
    assert not missing, f"rows without a case in TABLE_CASES: {missing}"


def test_every_row_cites_its_source() -> None:
    for rule in PROVIDER_RULES:
        assert rule.source.startswith("https://"), f"{rule.provider} {rule.models}: no source"
        assert rule.why, f"{rule.provider} {rule.models}: no why"


def test_unknown_models_get_the_default() -> None:
    target = resolve_target("some_new_provider", "model-x", None, dialect_of=get_dialect)
    assert (target.dialect.name, target.policy, target.strip) == (
        "passthrough",
        TurnPolicy.CURRENT_TURN,
        "any",
    )


def test_table_validation_names_the_bad_row() -> None:
    good = {"provider": "p", "dialect": "openai_chat", "policy": "current_turn", "why": "w"}
    load_rules(json.dumps({"version": 1, "rows": [good]}))
    with pytest.raises(ValueError, match="strip"):
        load_rules(json.dumps({"version": 1, "rows": [{**good, "strip": "middle"}]}))
    with pytest.raises(ValueError, match="unknown keys"):
        load_rules(json.dumps({"version": 1, "rows": [{**good, "keep": "all"}]}))
    with pytest.raises(ValueError):
        load_rules(json.dumps({"version": 1, "rows": [{**good, "policy": "some_turns"}]}))


def test_context_editing_and_clear_thinking_mean_the_provider_manages_thinking() -> None:
    assert provider_manages_thinking([{"context_management": CLEAR_THINKING}])
    assert provider_manages_thinking(
        [{}, {"thinking": {"type": "enabled", "clear_thinking": False}}]
    )
    tool_clearing = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    assert not provider_manages_thinking([{"context_management": tool_clearing}])
    assert not provider_manages_thinking([{"thinking": {"type": "enabled"}}])


# ------------------------------------------------------------------ policy semantics, pure

SIG = "CAISqwQKhwEIEBgCKkAciZInI2gcLrwOU5o9XFlIxHw9HaLIY6V9wHoK2E0w9TFrU5619C4C"


def _claude_history() -> list[dict[str, Any]]:
    """Three turns with a signed block on each assistant message; the last turn is a tool loop."""
    block = {"type": "thinking", "thinking": "0", "signature": SIG}
    call = {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [
        {"role": "user", "content": "one"},  # 0
        {"role": "assistant", "content": "a1", "thinking_blocks": [{**block, "thinking": "1"}]},
        {"role": "user", "content": "two"},  # 2
        {"role": "assistant", "content": "", "tool_calls": [call], "thinking_blocks": [block]},
        {"role": "tool", "tool_call_id": "t1", "content": "r"},  # 4
        {"role": "assistant", "content": "a2", "thinking_blocks": [{**block, "thinking": "2"}]},
        {"role": "user", "content": "three"},  # 6
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{**call, "id": "t2"}],
            "thinking_blocks": [{**block, "thinking": "3"}],
        },
        {"role": "tool", "tool_call_id": "t2", "content": "r"},  # 8
    ]


@pytest.mark.parametrize(
    ("policy", "kept"),
    [
        (TurnPolicy.CURRENT_TURN, [7]),
        (TurnPolicy.ALL_TURNS, [1, 3, 5, 7]),
        (TurnPolicy.TOOL_CALLS_ALL_TURNS, [3, 7]),
        (TurnPolicy.NONE, []),
    ],
)
def test_each_policy_keeps_its_turns(policy: TurnPolicy, kept: list[int]) -> None:
    rendered = render(_claude_history(), get_dialect("anthropic"), policy)
    assert rendered.kept == kept
    carrying = [i for i, m in enumerate(rendered.messages) if m.get("thinking_blocks")]
    assert carrying == kept


def test_leading_run_rule() -> None:
    # Left out 3 (a tool-call turn kept by another policy would leave 1 before a gap): 1 goes.
    assert leading_run_violations([1, 5, 7], [3]) == [1]
    assert leading_run_violations([5, 7], [1, 3]) == []
    assert leading_run_violations([1, 3, 5, 7], []) == []


def test_bound_claude_only_ever_loses_a_leading_run() -> None:
    """tool_calls_all_turns on a bound model would keep 3 and drop 1 and 5: 5 follows 3, so 3
    must go too (a non-leading removal invalidates every later block); 7, the tool loop the
    request answers, stays."""
    history = _claude_history()
    dialect = get_dialect("anthropic")
    as_rendered = render(history, dialect, TurnPolicy.TOOL_CALLS_ALL_TURNS)
    owns = _owns(history)
    rendered, limited = apply_limits(
        as_rendered,
        history,
        dialect,
        TurnPolicy.TOOL_CALLS_ALL_TURNS,
        {i: owns[i] for i in (*as_rendered.kept, *as_rendered.stripped)},
        strip="leading_run",
    )
    # A new value: what `render` made is left as it was.
    assert as_rendered == render(history, dialect, TurnPolicy.TOOL_CALLS_ALL_TURNS)
    assert as_rendered.kept == [3, 7]
    assert limited.leading_run == [3]
    assert rendered.kept == [7]
    assert rendered.stripped == [1, 3, 5]
    assert "thinking_blocks" not in rendered.messages[3]
    assert rendered.messages[7]["thinking_blocks"] == history[7]["thinking_blocks"]


def _owns(history: list[dict[str, Any]]) -> dict[int, Reasoning]:
    from litellm_reasoning.core.render import own_reasonings

    return {i: r for i, r in enumerate(own_reasonings(history)) if r is not None}


def test_budget_drops_oldest_earlier_turns_first_never_the_current_turn() -> None:
    history = _claude_history()
    dialect = get_dialect("anthropic")
    owns = _owns(history)
    each = estimate_tokens(owns[1])
    assert each == estimate_tokens(owns[3]) == estimate_tokens(owns[7])
    rendered = render(history, dialect, TurnPolicy.ALL_TURNS)
    rendered, limited = apply_limits(
        rendered,
        history,
        dialect,
        TurnPolicy.ALL_TURNS,
        {i: owns[i] for i in rendered.kept},
        strip="leading_run",
        max_tokens=2 * each,
    )
    assert limited.over_budget == [1, 3]
    assert rendered.kept == [5, 7]
    # A budget below the current turn's own reasoning: earlier turns go, the tool loop stays.
    rendered = render(history, dialect, TurnPolicy.ALL_TURNS)
    rendered, limited = apply_limits(
        rendered, history, dialect, TurnPolicy.ALL_TURNS, owns, max_tokens=0
    )
    assert limited.over_budget == [1, 3, 5]
    assert rendered.kept == [7]


def test_budget_cut_moves_in_half_budget_steps() -> None:
    """A growing conversation of 10-token replies under a 100-token budget: the reasoning sent
    always fits, and the cut (how many oldest replies go) moves only every 5 replies (half the
    budget), so the requests in between extend each other byte for byte."""
    cuts = []
    for n in range(1, 60):
        kept = list(range(n))
        tokens = dict.fromkeys(kept, 10)
        dropped = over_budget(kept, tokens, 100, droppable=set(kept[:-1]))
        assert dropped == kept[: len(dropped)]  # oldest first, a leading run
        assert 10 * (n - len(dropped)) <= 100
        cuts.append(len(dropped))
    moves = sum(1 for a, b in itertools.pairwise(cuts) if a != b)
    # Over budget from the 11th reply on (49 requests): a move at the 11th, 16th, ... 56th.
    assert moves == 10
    assert all(b - a in (0, 5) for a, b in itertools.pairwise(cuts))


def test_budget_never_drops_what_kimi_requires() -> None:
    """Kimi: every earlier tool-call message must carry reasoning_content (400 otherwise)."""
    history = _openai_history()
    dialect = get_dialect("openai_chat")
    rendered = render(history, dialect, TurnPolicy.TOOL_CALLS_ALL_TURNS)
    owns = _owns(history)
    rendered, limited = apply_limits(
        rendered, history, dialect, TurnPolicy.TOOL_CALLS_ALL_TURNS, owns, max_tokens=0
    )
    assert limited.over_budget == []
    assert rendered.kept == [1, 5]


def test_budget_on_deepseek_with_tools_sends_the_empty_field() -> None:
    """DeepSeek V4 with tools requires the field on every assistant message; an empty one
    passes (§5), so a budget may drop the text but the field stays."""
    history = _openai_history()
    dialect = get_dialect("openai_chat_required")
    rendered = render(history, dialect, TurnPolicy.ALL_TURNS)
    owns = _owns(history)
    rendered, _ = apply_limits(rendered, history, dialect, TurnPolicy.ALL_TURNS, owns, max_tokens=0)
    assert [m.get("reasoning_content") for m in rendered.messages if m["role"] == "assistant"] == [
        "",
        "",
        "now r",
    ]


def _openai_history() -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [
        {"role": "user", "content": "one"},  # 0
        {"role": "assistant", "content": "", "reasoning_content": "call f", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},  # 2
        {"role": "assistant", "content": "done", "reasoning_content": "answer"},  # 3
        {"role": "user", "content": "two"},  # 4
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "now r",
            "tool_calls": [{**call, "id": "c2"}],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "r"},  # 6
    ]


def test_estimate_counts_text_and_opaque_payloads() -> None:
    reasoning = Reasoning(
        parts=(
            ReasoningPart(text="a" * 8, signature="s" * 8),
            ReasoningPart(kind="redacted", data="d" * 3),
        )
    )
    assert estimate_tokens(reasoning) == 5  # ceil(19 / 4)


# ------------------------------------------------------------------ on the wire, real LiteLLM


@pytest.fixture
def fresh() -> Iterator[None]:
    yield
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = []


@pytest.mark.parametrize(
    ("provider", "tools", "expected"),
    [
        # current_turn: only the current turn's tool call carries it.
        ("dashscope", False, [None, None, "now r"]),
        # all_turns (DeepSeek V4 with tools): every assistant message.
        ("deepseek", True, ["call f", "answer", "now r"]),
        # tool_calls_all_turns (Kimi): earlier tool-call messages and the current turn.
        ("moonshot", False, ["call f", None, "now r"]),
        # none (xAI chat completions has no reasoning input).
        ("xai", False, [None, None, None]),
    ],
)
async def test_each_policy_on_the_wire(
    provider: str,
    tools: bool,
    expected: list[str | None],
    upstream: Upstream,
    fresh: None,
) -> None:
    from litellm_reasoning.testing.upstream import Reply

    register(ReasoningCallback())
    model = f"pol-{provider}-{uuid.uuid4().hex[:6]}"
    upstream.script(model, Reply(message={"content": "ok"}))
    extra: dict[str, Any] = {}
    if tools:
        extra["tools"] = [
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        ]
    await litellm.acompletion(
        model=f"{provider}/{model}",
        api_base=upstream.base_url,
        api_key="k",
        messages=_openai_history(),
        **extra,
    )
    (body,) = upstream.bodies(model)
    sent = [m.get("reasoning_content") for m in body["messages"] if m["role"] == "assistant"]
    assert sent == expected


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream(strict=True) as up:
        yield up


def _claude_content(body: dict[str, Any]) -> list[list[str]]:
    """Per assistant message on the wire, the types of its content blocks."""
    return [
        [block["type"] for block in m["content"]]
        for m in body["messages"]
        if m["role"] == "assistant"
    ]


@pytest.mark.parametrize(
    ("model", "settings", "expected"),
    [
        # Bound model, default all_turns: every block, byte for byte.
        ("claude-fable-5-1", {}, [True, True, True, True]),
        # Earlier Claude: current turn only (the API strips earlier turns itself).
        ("claude-sonnet-4-5", {}, [False, False, False, True]),
        # Bound model with a budget of two blocks: the oldest two go, as one leading run.
        ("claude-fable-5-1", {"max_reasoning_tokens": "two"}, [False, False, True, True]),
        # Bound model overridden to tool_calls_all_turns: 3 is kept by the policy but sits
        # after the stripped 1... and before the stripped 5: only a leading run may go.
        ("claude-fable-5-1", {"policies": {"*": "tool_calls_all_turns"}}, [False] * 3 + [True]),
        # The same override on a model that does not bind: the policy as asked.
        (
            "claude-opus-4-6",
            {"policies": {"*": "tool_calls_all_turns"}},
            [False, True, False, True],
        ),
    ],
)
async def test_claude_policies_on_the_wire(
    model: str,
    settings: dict[str, Any],
    expected: list[bool],
    claude: AnthropicUpstream,
    fresh: None,
) -> None:
    history = _claude_history()
    if settings.get("max_reasoning_tokens") == "two":
        settings = {"max_reasoning_tokens": 2 * estimate_tokens(_owns(history)[1])}
    register(ReasoningCallback(**settings))
    claude.script(model, AnthropicReply([{"type": "text", "text": "ok"}]))
    before = len(claude.bodies(model))
    await litellm.acompletion(
        model=f"anthropic/{model}",
        api_base=claude.base_url,
        api_key="k",
        messages=history,
        tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        thinking={"type": "enabled", "budget_tokens": 1024},
        max_tokens=2048,
    )
    (body,) = claude.bodies(model)[before:]
    assistants = [m for m in body["messages"] if m["role"] == "assistant"]
    carrying = [m["content"][0]["type"] == "thinking" for m in assistants]
    assert carrying == expected
    # What is sent is byte for byte what the client had.
    sources = [m for m in history if m["role"] == "assistant"]
    for sent, source, kept in zip(assistants, sources, carrying, strict=True):
        if kept:
            assert sent["content"][0] == source["thinking_blocks"][0]


async def test_claude_context_editing_sends_every_turn_and_the_edit(
    claude: AnthropicUpstream, fresh: None
) -> None:
    """An earlier Claude with `clear_thinking_20251015`: the API clears server-side, so the
    client's full history goes (every block) and LiteLLM passes the edit and its beta header."""
    register(ReasoningCallback())
    model = "claude-sonnet-4-5"
    claude.script(model, AnthropicReply([{"type": "text", "text": "ok"}]))
    before = len(claude.received)
    await litellm.acompletion(
        model=f"anthropic/{model}",
        api_base=claude.base_url,
        api_key="k",
        messages=_claude_history(),
        thinking={"type": "enabled", "budget_tokens": 1024},
        max_tokens=2048,
        context_management=CLEAR_THINKING,
    )
    (received,) = claude.received[before:]
    assert [blocks[0] for blocks in _claude_content(received.body)] == ["thinking"] * 4
    assert received.body["context_management"] == CLEAR_THINKING
    beta = {k.lower(): v for k, v in received.headers.items()}.get("anthropic-beta", "")
    assert "context-management-2025-06-27" in beta


# ------------------------------------------------------------------ one-line overrides


async def test_override_in_code_one_line(upstream: Upstream, fresh: None) -> None:
    from litellm_reasoning.testing.upstream import Reply

    register(ReasoningCallback(policies={"moonshot/*": "all_turns"}))
    model = f"ovr-{uuid.uuid4().hex[:6]}"
    upstream.script(model, Reply(message={"content": "ok"}))
    await litellm.acompletion(
        model=f"moonshot/{model}",
        api_base=upstream.base_url,
        api_key="k",
        messages=_openai_history(),
    )
    (body,) = upstream.bodies(model)
    sent = [m.get("reasoning_content") for m in body["messages"] if m["role"] == "assistant"]
    assert sent == ["call f", "answer", "now r"]


def test_override_in_proxy_config_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """`callback_settings: litellm_reasoning: policies: {"anthropic/claude-opus-4-6": ...}`
    and `max_reasoning_tokens` reach the proxy's instance; bad values stop it at startup."""
    from litellm_reasoning.settings import callback_from_environment

    section = {
        "policies": {"anthropic/claude-opus-4-6": "current_turn"},
        "max_reasoning_tokens": 4000,
    }
    monkeypatch.setattr(litellm, "callback_settings", {"litellm_reasoning": section}, raising=False)
    cb = callback_from_environment()
    assert cb.max_reasoning_tokens == 4000
    names = ["anthropic/claude-opus-4-6"]
    target = resolve_target(
        "anthropic",
        "claude-opus-4-6",
        None,
        names=names,
        overrides=cb.overrides,
        dialect_of=get_dialect,
    )
    assert target.policy is TurnPolicy.CURRENT_TURN
    assert target.strip == "any"
    # The override changes the policy, never a bound model's strip rule.
    bound = resolve_target(
        "anthropic",
        "claude-fable-5-1",
        None,
        names=["x"],
        overrides=cb.overrides,
        dialect_of=get_dialect,
    )
    assert bound.strip == "leading_run"
    with pytest.raises(ValueError):
        Settings.load({"max_reasoning_tokens": -1}, environ={})
    with pytest.raises(ValueError):
        Settings.load({"policies": {"*": "some_turns"}}, environ={})
    from_env = Settings.load({}, environ={"LITELLM_REASONING_MAX_REASONING_TOKENS": "123"})
    assert from_env.max_reasoning_tokens == 123


# ------------------------------------------------------------------ a long agent session

CASSETTES = REPO / "cassettes"
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def _expected_tokens(
    history: list[dict[str, Any]], policy: str, reasoning: dict[int, str]
) -> tuple[int, int]:
    """(sent, saved) by the rules, for a client that sent `reasoning` (index -> text) itself:
    all_turns sends every message's, current_turn those after the last user message, none
    nothing; what the client sent and is not sent is saved."""
    last_user = max(i for i, m in enumerate(history) if m["role"] == "user")
    sent = saved = 0
    for index, text in reasoning.items():
        keep = policy == "all_turns" or (policy == "current_turn" and index > last_user)
        tokens = math.ceil(len(text) / 4)
        if keep:
            sent += tokens
        else:
            saved += tokens
    return sent, saved


def _prefix_intact(previous: list[Any], current: list[Any]) -> bool:
    """Request N+1's messages start with the exact bytes of request N's (a prompt cache keyed
    on request N hits in full)."""
    dump = json.dumps  # the server's parse of each body, re-serialised the same way
    before = dump(previous, ensure_ascii=False, separators=(",", ":"))[:-1]
    return dump(current, ensure_ascii=False, separators=(",", ":")).startswith(before)


def _deepseek_turn(turn: int) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The recorded DeepSeek tool loop's three replies (tool-call ids unique per turn) and
    its recorded tool results by the new ids."""
    data = json.loads(DEEPSEEK_RECORDING.read_text())
    replies = [json.loads(r)["choices"][0]["message"] for r in data["responses"]]
    recorded = {
        m["tool_call_id"]: m for m in data["requests"][-1]["messages"] if m["role"] == "tool"
    }
    results: dict[str, dict[str, Any]] = {}
    for reply in replies:
        for call in reply.get("tool_calls") or []:
            new_id = f"{call['id']}_t{turn}"
            results[new_id] = {**recorded[call["id"]], "tool_call_id": new_id}
            call["id"] = new_id
            call.pop("index", None)
    return replies, results


DEEPSEEK_RECORDING = REPO / "litellm_reasoning" / "data" / "deepseek_tool_loop.json"


@pytest.mark.parametrize("policy", ["all_turns", "current_turn", "none"])
async def test_long_deepseek_session_prefix_and_tokens(
    policy: str, upstream: Upstream, fresh: None
) -> None:
    """Six turns of the recorded DeepSeek V4 tool loop (18 requests, tools on), from a client
    that sends its reasoning back: every request's wire bytes against the previous one, and
    the summary's token figures against the rules."""
    from litellm_reasoning.testing.upstream import Reply

    cb = ReasoningCallback(policies={"*": policy})
    register(cb)
    collector = _Summaries()
    litellm.callbacks = [cb, collector]
    model = f"long-{policy}-{uuid.uuid4().hex[:6]}"
    data = json.loads(DEEPSEEK_RECORDING.read_text())
    tools = data["requests"][0]["tools"]
    history: list[dict[str, Any]] = [
        m for m in data["requests"][0]["messages"] if m["role"] == "system"
    ]
    reasoning: dict[int, str] = {}
    response_ids: list[str] = []
    expected: list[tuple[int, int]] = []
    new_turn: list[bool] = []
    turns = 6
    for turn in range(turns):
        replies, results = _deepseek_turn(turn)
        upstream.script(model, *(Reply(message=r) for r in replies))
        history.append({"role": "user", "content": f"My guess is {turn % 6 + 1}"})
        for step in range(3):
            expected.append(_expected_tokens(history, policy, reasoning))
            new_turn.append(step == 0)
            response = await litellm.acompletion(
                model=f"deepseek/{model}",
                api_base=upstream.base_url,
                api_key="k",
                messages=[dict(m) for m in history],
                tools=tools,
            )
            response_ids.append(response.id)
            message = response.choices[0].message
            kept: dict[str, Any] = {"role": "assistant", "content": message.content}
            reasoning[len(history)] = message.reasoning_content
            kept["reasoning_content"] = message.reasoning_content
            if message.tool_calls:
                kept["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": dict(c.function)}
                    for c in message.tool_calls
                ]
            history.append(kept)
            history += [dict(results[c["id"]]) for c in kept.get("tool_calls") or []]
    bodies = [b["messages"] for b in upstream.bodies(model)]
    assert len(bodies) == 3 * turns
    intact = [_prefix_intact(a, b) for a, b in itertools.pairwise(bodies)]
    if policy == "current_turn":
        # Within a turn each request extends the previous one; a new turn strips the last
        # turn's reasoning (DeepSeek with tools then gets the empty field), so it cannot.
        assert intact == [not first for first in new_turn[1:]]
    else:
        assert all(intact)
    summaries = await collector.wait_for(response_ids)
    got = [(s["reasoning_tokens"]["sent"], s["reasoning_tokens"]["saved"]) for s in summaries]
    assert got == expected
    total_sent = sum(sent for sent, _ in got)
    if policy == "all_turns":
        # The last request carries every earlier reply's reasoning.
        assert got[-1][0] == sum(math.ceil(len(t) / 4) for t in list(reasoning.values())[:-1])
    total_saved = sum(saved for _, saved in got)
    if policy == "none":
        assert total_sent == 0
    if policy == "current_turn":
        assert total_sent > 0 and total_saved > 0


class _Summaries(CustomLogger):
    """The decisions summary of each request, from LiteLLM's StandardLoggingPayload, by the
    id of the response it produced."""

    def __init__(self) -> None:
        super().__init__()
        self.instance_id = uuid.uuid4().hex
        self.summaries: dict[str, dict[str, Any]] = {}

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        payload = kwargs.get("standard_logging_object") or {}
        spend = (payload.get("metadata") or {}).get("spend_logs_metadata") or {}
        self.summaries[response_obj.id] = spend["litellm_reasoning"]

    async def wait_for(self, response_ids: list[str]) -> list[dict[str, Any]]:
        for _ in range(200):  # success events run just after each call returns
            if all(i in self.summaries for i in response_ids):
                break
            await asyncio.sleep(0.05)
        return [self.summaries[i] for i in response_ids]


def _claude_replies(turn: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per turn: the recorded claude-sonnet-4 thinking + tool_use reply (tool id unique per
    turn), then the recorded claude-opus-5 thinking + text reply: real signatures."""
    import yaml

    loop = yaml.safe_load((CASSETTES / "anthropic_tool_loop.yaml").read_text("utf-8"))
    step = json.loads(loop["interactions"][0]["response"]["body"]["string"])["content"]
    tool_use = next(b for b in step if b["type"] == "tool_use")
    tool_use = {**tool_use, "id": f"{tool_use['id']}_t{turn}"}
    thinking = [b for b in step if b["type"] == "thinking"]
    opus = json.loads((CASSETTES / "anthropic_opus5_reasoning_reply.json").read_text("utf-8"))
    answer = [b for b in opus["content"] if b["type"] in ("thinking", "text")]
    return [*thinking, tool_use], answer


def _claude_block_tokens(block: dict[str, Any]) -> int:
    return math.ceil((len(block["thinking"]) + len(block["signature"])) / 4)


@pytest.mark.parametrize(
    ("model", "settings", "policy"),
    [
        ("claude-fable-5-1", {}, "all_turns"),
        ("claude-sonnet-4-5", {}, "current_turn"),
        ("claude-fable-5-1", {"max_reasoning_tokens": 2000}, "budget"),
    ],
)
async def test_long_claude_session_prefix_and_tokens(
    model: str, settings: dict[str, Any], policy: str, claude: AnthropicUpstream, fresh: None
) -> None:
    """Five turns of a Claude tool loop (recorded signed blocks) from a client that drops
    reasoning: the blocks are restored byte for byte; under all_turns every request extends
    the previous one; under current_turn only within a turn; a budget on a bound model drops
    a leading run and keeps the last turns' blocks under it."""
    cb = ReasoningCallback(**settings)
    register(cb)
    collector = _Summaries()
    litellm.callbacks = [cb, collector]
    history: list[dict[str, Any]] = []
    blocks: dict[int, dict[str, Any]] = {}  # history index -> its thinking block
    response_ids: list[str] = []
    turns = 5
    before = len(claude.bodies(model))
    for turn in range(turns):
        first, second = _claude_replies(turn)
        claude.script(model, AnthropicReply(first), AnthropicReply(second))
        history.append({"role": "user", "content": f"question {turn}"})
        for reply in (first, second):
            response = await litellm.acompletion(
                model=f"anthropic/{model}",
                api_base=claude.base_url,
                api_key="k",
                messages=[dict(m) for m in history],
                tools=TOOLS,
                thinking={"type": "enabled", "budget_tokens": 1024},
                max_tokens=2048,
            )
            response_ids.append(response.id)
            message = response.choices[0].message
            blocks[len(history)] = reply[0]
            dropped: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                call = message.tool_calls[0]
                dropped["tool_calls"] = [
                    {"id": call.id, "type": "function", "function": dict(call.function)}
                ]
            history.append(dropped)
            if message.tool_calls:
                history.append({"role": "tool", "tool_call_id": call.id, "content": "Mexico"})
    bodies = [b["messages"] for b in claude.bodies(model)[before:]]
    assert len(bodies) == 2 * turns
    intact = [_prefix_intact(a, b) for a, b in itertools.pairwise(bodies)]
    summaries = await collector.wait_for(response_ids)
    last = bodies[-1]
    carrying = [m["content"][0] for m in last if m["role"] == "assistant"]
    thinking_sent = [b for b in carrying if b["type"] == "thinking"]
    if policy == "all_turns":
        assert all(intact)
        assert thinking_sent == [blocks[i] for i in sorted(blocks)][:-1]
        assert summaries[-1]["reasoning_tokens"]["sent"] == sum(
            _claude_block_tokens(blocks[i]) for i in sorted(blocks)[:-1]
        )
    elif policy == "current_turn":
        assert intact == [i % 2 == 0 for i in range(len(intact))]
        assert thinking_sent == [blocks[sorted(blocks)[-2]]]
    else:
        # A leading run: every block sent is a suffix of the history's blocks, within budget,
        # and the current turn's tool-call block is always there.
        earlier = [blocks[i] for i in sorted(blocks)][:-1]
        assert thinking_sent == earlier[len(earlier) - len(thinking_sent) :]
        assert thinking_sent[-1] == earlier[-1]
        for summary in summaries:
            decisions = list(summary["messages"].values())
            if "over_budget" in decisions:
                first_kept = min(
                    (i for i, d in enumerate(decisions) if d in ("kept", "restored")),
                    default=len(decisions),
                )
                assert all(d == "over_budget" for d in decisions[:first_kept])
                assert summary["reasoning_tokens"]["saved"] > 0
        assert any("over_budget" in s["messages"].values() for s in summaries)


@pytest.mark.parametrize(
    ("model", "template", "expected"),
    [
        # vLLM's Qwen template keeps only the current turn's thinking by default...
        ("hosted_vllm/qwen3.6-35b", None, [None, None, "now r"]),
        # ...and every turn's when the request asks it to (Qwen3.6+ `preserve_thinking`).
        ("hosted_vllm/qwen3.6-35b", {"preserve_thinking": True}, ["call f", "answer", "now r"]),
        # GLM through an OpenAI-compatible server: `clear_thinking: false` in the template.
        ("openai/glm-4.7", {"clear_thinking": False}, ["call f", "answer", "now r"]),
        ("openai/glm-4.7", {"clear_thinking": True}, [None, None, "now r"]),
    ],
)
async def test_a_chat_template_that_keeps_thinking_gets_every_turn(
    model: str,
    template: dict[str, Any] | None,
    expected: list[str | None],
    upstream: Upstream,
    fresh: None,
) -> None:
    from litellm_reasoning.testing.upstream import Reply

    register(ReasoningCallback())
    name = f"{model.split('/')[1]}-{uuid.uuid4().hex[:6]}"
    upstream.script(name, Reply(message={"content": "ok"}))
    extra = {"extra_body": {"chat_template_kwargs": template}} if template else {}
    await litellm.acompletion(
        model=f"{model.split('/')[0]}/{name}",
        api_base=upstream.base_url,
        api_key="k",
        messages=_openai_history(),
        **extra,
    )
    (body,) = upstream.bodies(name)
    sent = [
        m.get("reasoning") or m.get("reasoning_content")
        for m in body["messages"]
        if m["role"] == "assistant"
    ]
    assert sent == expected


def test_litellms_model_map_says_which_claude_keeps_its_thinking() -> None:
    """A Claude model the table does not know by name gets the generic Claude row (current
    turn); where LiteLLM's model map says it keeps earlier thinking in its context
    (`supports_thinking_cache_preservation`), every turn's blocks go, as for the models the
    table names. Other families' rows do not read the flag."""
    import litellm

    kept, unknown = "claude-sonnet-6-map-keeps", "claude-sonnet-6-map-silent"
    litellm.register_model(
        {
            kept: {
                "litellm_provider": "anthropic",
                "mode": "chat",
                "supports_thinking_cache_preservation": True,
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
            }
        }
    )
    engine = ReasoningCallback().engine

    def policy(model: str) -> str:
        kwargs = {"model": f"anthropic/{model}", "api_key": "k", "messages": []}
        return engine.target(engine.facts_of(kwargs)).policy.value

    assert policy(kept) == "all_turns"
    assert policy(unknown) == "current_turn"
    # The map is read on every request, not remembered with the resolved target: an entry
    # registered after the deployment's first call counts from the next one.
    litellm.register_model(
        {
            unknown: {
                "litellm_provider": "anthropic",
                "mode": "chat",
                "supports_thinking_cache_preservation": True,
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
            }
        }
    )
    assert policy(unknown) == "all_turns"
    zai = resolve_target("zai", "glm-5", None, model_keeps_thinking=True, dialect_of=get_dialect)
    assert zai.policy is TurnPolicy.CURRENT_TURN
