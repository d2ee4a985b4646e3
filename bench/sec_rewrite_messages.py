"""The rewrite of `/v1/messages` requests (Claude Code, the Anthropic SDKs) against its floor:
part of the rewrite section, a table of its own (the block-messages format's flow)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from common import HookArms, Section, rewrite_table

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.formats import blocks
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.turns import current_turn_start
from litellm_reasoning.memo.chain_digests import ChainDigests
from litellm_reasoning.wire.anthropic.messages import record_of_reply

MODEL = "claude-opus-4-5"
"""Claude Opus 4.5 keeps its thinking on every turn (policy all_turns): every assistant message
of the history is looked up and restored (the heaviest rule of this format)."""
SYSTEM = "You are Claude Code, an interactive CLI tool. Use the tools."


def claude_code_history(n: int) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """A Claude Code session of about `n` Anthropic-format messages: turns of a user request,
    tool uses (assistant) and their results (user), and a final answer; the client dropped
    the thinking blocks. Returns the messages and each assistant message's thinking block."""
    messages: list[dict[str, Any]] = []
    thinking: dict[int, dict[str, Any]] = {}
    task = 0
    while len(messages) < n - 1:
        task += 1
        messages.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": f"Fix the parser (task {task})."}],
            }
        )
        for step in range(8):
            if len(messages) >= n - 2:
                break
            tool_id = f"toolu_{uuid.uuid4().hex[:20]}"
            thinking[len(messages)] = {
                "type": "thinking",
                "thinking": f"Step {step}: read the next file and check the failing case. " * 8,
                "signature": "EqQBCkYIBxgCKkB" + uuid.uuid4().hex * 4,
            }
            messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Let me look."},
                        {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": "Read",
                            "input": {"file_path": f"src/p{len(messages)}.py", "limit": 200},
                        },
                    ],
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": tool_id,
                            "content": "def parse(x):\n    return x\n" * 20,
                        }
                    ],
                }
            )
        if len(messages) < n - 1:
            thinking[len(messages)] = {"type": "thinking", "thinking": "Done.", "signature": "Eq"}
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]})
    if messages[-1]["role"] != "user":
        messages.append({"role": "user", "content": [{"type": "text", "text": "Thanks. Next?"}]})
    return messages, thinking


def hook_kwargs(messages: list[Any]) -> dict[str, Any]:
    """The kwargs of `async_pre_call_deployment_hook` for LiteLLM's `anthropic_messages`."""
    return {
        "model": MODEL,
        "custom_llm_provider": "anthropic",
        "api_key": "k",
        "litellm_call_id": str(uuid.uuid4()),
        "litellm_logging_obj": SimpleNamespace(model_call_details={}),
        "messages": messages,
        "system": SYSTEM,
        "max_tokens": 32000,
    }


def prime(cb: ReasoningCallback, messages: list[Any], thinking: dict[int, Any]) -> int:
    """Each assistant message's thinking block in the store, where a capture files it."""
    scope = cb.engine.facts_of(hook_kwargs(messages)).scope
    system = blocks.system_digest(SYSTEM)
    missing, _ = blocks.wanted(
        scope,
        messages,
        TurnPolicy.ALL_TURNS,
        current_turn_start(messages),
        blocks.prefix_digests(messages),
        system,
    )
    records = {}
    for i, key in missing.items():
        record = record_of_reply(
            [thinking[i], *messages[i]["content"]], provider="anthropic", model=MODEL
        )
        if record is not None:
            records[key] = record
    cb.store.put_many(scope, records)
    return len(records)


def add_to(
    section: Section,
    cb: ReasoningCallback,
    sizes: list[int],
    min_repeat: int,
    budget_seconds: float,
) -> None:
    """The `/v1/messages` table of the rewrite section, by `cb` (registered with LiteLLM): at
    least `min_repeat` rounds per size, more while they fit in about `budget_seconds` (a fixed
    7 rounds had left the medians of the small sizes at the mercy of one slow round)."""
    arms = HookArms(
        cb,
        hook_kwargs,
        "anthropic_messages",
        "messages",
        "block_digests",
        lambda: ChainDigests(blocks.next_digest, blocks.EMPTY, blocks.facts_of),
    )
    cases = (
        (messages, prime(cb, messages, thinking))
        for messages, thinking in map(claude_code_history, sizes)
    )
    names = ("/v1/messages", "`/v1/messages` (Claude Code)", "messages")
    rewrite_table(section, arms, cases, names, budget_seconds, min_repeat)
    section.note(
        f"`/v1/messages`: a Claude Code-like session ({MODEL}: policy all_turns, every "
        "assistant message's signed thinking block dropped by the client and restored from the "
        "in-memory store), through the deployment hook as LiteLLM calls it for "
        "`anthropic_messages`; `rewrite`: the session's previous request went through just "
        "before (the format's prefix memo holds it); `cold`: the memo empty. Process CPU time, "
        "medians, the arms interleaved; no goal of its own (info)."
    )
