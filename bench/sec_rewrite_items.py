"""The rewrite of Responses requests (Codex CLI, the openai SDK's `responses.create`) against
its floor: part of the rewrite section, a table of its own (the input-items format's flow)."""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace
from typing import Any

from common import HookArms, Section, rewrite_table

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core import identity
from litellm_reasoning.core.formats import items
from litellm_reasoning.core.formats.items import Conversation
from litellm_reasoning.memo.chain_digests import ChainDigests
from litellm_reasoning.wire.openai_responses.input_items import records

MODEL = "openai/gpt-5"
"""A reasoning model of the Responses API: every reasoning item the client dropped is looked
up and put back before its function call (encrypted content, `store` on)."""


def codex_history(n: int) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """A Codex-like tool loop of about `n` input items: a user request, then function calls
    and their outputs, each call after a reasoning item the client dropped. Returns the input
    and the replies (reasoning item and function call) in order."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": "Fix the failing test."}]}
    ]
    replies: list[list[dict[str, Any]]] = []
    step = 0
    while len(history) < n - 1:
        call = {
            "type": "function_call",
            "id": f"fc_{step:08d}",
            "call_id": f"call_{uuid.uuid4().hex[:24]}",
            "name": "shell",
            "arguments": json.dumps({"command": ["cat", f"src/p{step}.py"]}),
        }
        thought = {
            "type": "reasoning",
            "id": f"rs_{step:08d}",
            "summary": [],
            "encrypted_content": "gAAAAB" + uuid.uuid4().hex * 20,
        }
        replies.append([thought, call])
        output = {"type": "function_call_output", "call_id": call["call_id"]}
        history += [call, {**output, "output": "def parse(x):\n    return x\n" * 20}]
        step += 1
    return history, replies


def hook_kwargs(input_items: list[Any]) -> dict[str, Any]:
    """The kwargs of `async_pre_call_deployment_hook` for LiteLLM's `aresponses`."""
    return {
        "model": MODEL,
        "custom_llm_provider": "openai",
        "api_key": "k",
        "litellm_call_id": str(uuid.uuid4()),
        "litellm_logging_obj": SimpleNamespace(model_call_details={}),
        "input": input_items,
    }


def prime(cb: ReasoningCallback, history: list[Any], replies: list[list[Any]]) -> int:
    """Each reply's reasoning item in the store, where a capture files it."""
    scope = cb.engine.facts_of(hook_kwargs(history)).scope
    stored = {}
    for step, reply in enumerate(replies):
        before = history[: 1 + 2 * step]  # the input the reply answered
        stored.update(
            records(Conversation.of(scope, before), reply, provider="openai", model="gpt-5")
        )
    cb.store.put_many(scope, stored)
    return len(stored)


def add_to(
    section: Section,
    cb: ReasoningCallback,
    sizes: list[int],
    min_repeat: int,
    budget_seconds: float,
) -> None:
    """The Responses table of the rewrite section, by `cb` (registered with LiteLLM)."""
    arms = HookArms(
        cb,
        hook_kwargs,
        "aresponses",
        "input",
        "item_digests",
        lambda: ChainDigests(items.next_digest, identity.EMPTY_DIGEST),
    )
    cases = (
        (history, prime(cb, history, replies)) for history, replies in map(codex_history, sizes)
    )
    rewrite_table(
        section,
        arms,
        cases,
        ("Responses", "Responses (Codex)", "input items"),
        budget_seconds,
        min_repeat,
    )
    section.note(
        f"Responses: a Codex-like tool loop ({MODEL}: every reasoning item the client dropped "
        "put back before its function call from the in-memory store, `store` on), through the "
        "deployment hook as LiteLLM calls it for `aresponses`; `rewrite`: the loop's previous "
        "request went through just before (the format's prefix memo holds it); `cold`: the "
        "memo empty. Process CPU time, medians, the arms interleaved; no goal of its own (info)."
    )
