"""The rewrite of Responses requests (Codex CLI, the openai SDK's `responses.create`) against
its floor: part of the rewrite section, a table of its own (the input-items format's flow)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from types import SimpleNamespace
from typing import Any

from common import REWRITE_COLUMNS, Section, fmt_ms, rewrite_row

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core import identity
from litellm_reasoning.core.formats import items
from litellm_reasoning.core.formats.items import Conversation
from litellm_reasoning.memo.chain_digests import ChainDigests
from litellm_reasoning.wire.openai_responses.input_items import records

CLOCK = time.process_time
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


async def _once(cb: ReasoningCallback, history: list[Any]) -> tuple[float, list[Any]]:
    kwargs = hook_kwargs(json.loads(json.dumps(history)))  # new dicts, as the proxy parses
    start = CLOCK()
    out = await cb.async_pre_call_deployment_hook(kwargs, "aresponses")
    elapsed = CLOCK() - start
    cb.log_failure_event(kwargs["litellm_logging_obj"].model_call_details, None, None, None)
    assert out is not None
    return elapsed, out["input"]


async def _warm(cb: ReasoningCallback, history: list[Any]) -> tuple[float, list[Any]]:
    await _once(cb, history[:-2])
    return await _once(cb, history)


async def _cold(cb: ReasoningCallback, history: list[Any]) -> tuple[float, list[Any]]:
    engine = cb.engine
    remembered = engine.item_digests
    engine.item_digests = ChainDigests(items.next_digest, identity.EMPTY_DIGEST)
    try:
        return await _once(cb, history)
    finally:
        engine.item_digests = remembered


def add_to(
    section: Section,
    cb: ReasoningCallback,
    sizes: list[int],
    min_repeat: int,
    budget_seconds: float,
) -> None:
    """The Responses table of the rewrite section, by `cb` (registered with LiteLLM)."""
    rows = []
    for n in sizes:
        history, replies = codex_history(n)
        primed = prime(cb, history, replies)
        before = cb.stats["restored"]
        _, wire = asyncio.run(_cold(cb, history))
        restored = cb.stats["restored"] - before
        assert restored == primed, (restored, primed)
        _, warm_wire = asyncio.run(_warm(cb, history))
        assert warm_wire == wire, "the remembered history changed what is sent"
        row, warm, cold = rewrite_row(
            str(len(history)),
            restored,
            wire,
            lambda history=history: _warm(cb, history),
            lambda history=history: _cold(cb, history),
            budget_seconds,
            min_repeat,
        )
        rows.append(row)
        print(f"  Responses n={len(history)}: warm {fmt_ms(warm)} cold {fmt_ms(cold)}", flush=True)
    section.lines.append("Responses (Codex):")
    section.lines.append("")
    section.table(
        ["input items", *REWRITE_COLUMNS],
        rows,
    )
    section.note(
        f"Responses: a Codex-like tool loop ({MODEL}: every reasoning item the client dropped "
        "put back before its function call from the in-memory store, `store` on), through the "
        "deployment hook as LiteLLM calls it for `aresponses`; `rewrite`: the loop's previous "
        "request went through just before (the format's prefix memo holds it); `cold`: the "
        "memo empty. Process CPU time, medians, the arms interleaved; no goal of its own (info)."
    )
