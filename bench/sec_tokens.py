"""Tokens: input tokens per request and the share of each request that repeats the previous one
byte for byte (what a provider's prompt cache can reuse), per turn policy, on a long agent
session built from the recorded DeepSeek tool loop."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
import json
import uuid
from collections.abc import Callable
from typing import Any

import litellm
from common import Section, deepseek_recording, median, verdict

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.refusals import deepseek_reasoning_required
from litellm_reasoning.testing.upstream import Reply, Upstream

BUDGET = 200
NO_CALLBACK = "no callback"
ARMS: dict[str, dict[str, Any] | None] = {
    "all_turns": {"policies": {"*": "all_turns"}},
    "current_turn": {"policies": {"*": "current_turn"}},
    "none": {"policies": {"*": "none"}},
    f"all_turns, budget {BUDGET}": {
        "policies": {"*": "all_turns"},
        "max_reasoning_tokens": BUDGET,
    },
    NO_CALLBACK: None,
}
"""Each arm's `ReasoningCallback` settings; the budget arm caps the reasoning one request
carries (`max_reasoning_tokens`, characters/4 estimate), oldest earlier turns first; the last
arm registers no callback (the same dropping client, what LiteLLM alone sends)."""
POLICIES = tuple(ARMS)
CACHE_BLOCK = 64
"""The prompt cache's unit in tokens (DeepSeek's context cache stores 64-token units)."""


class CachingUpstream(Upstream):
    """The local server, reporting a prompt cache in its replies' usage, in DeepSeek's recorded
    shape (`prompt_cache_hit_tokens`, `prompt_tokens_details.cached_tokens`): the request's
    leading whole 64-token units that repeat the previous request of its model byte for byte
    are served from the cache."""

    def __init__(self, count: Callable[[str], int]) -> None:
        super().__init__()
        self.count = count
        self._previous: dict[str, str] = {}

    def answer(self, body: dict[str, Any], reply: Reply | None) -> tuple[int, str, bytes]:
        if reply is not None:
            text = json.dumps(body.get("messages"), ensure_ascii=False, separators=(",", ":"))
            model = str(body.get("model"))
            common = _common_prefix(self._previous.get(model, ""), text)
            self._previous[model] = text
            prompt = self.count(text)
            hit = min(prompt, self.count(text[:common]) // CACHE_BLOCK * CACHE_BLOCK)
            reply = dataclasses.replace(
                reply,
                usage={
                    "prompt_tokens": prompt,
                    "completion_tokens": 10,
                    "total_tokens": prompt + 10,
                    "prompt_tokens_details": {"cached_tokens": hit},
                    "prompt_cache_hit_tokens": hit,
                    "prompt_cache_miss_tokens": prompt - hit,
                },
            )
        return super().answer(body, reply)


def _tokenizer() -> tuple[Callable[[str], int], str]:
    """cl100k_base through tiktoken when its file is available offline, else characters / 4."""
    try:
        # LiteLLM ships cl100k_base and points TIKTOKEN_CACHE_DIR at it: no download.
        from litellm.litellm_core_utils.default_encoding import encoding

        encoding.encode("probe")
    except Exception as exc:
        return (lambda text: len(text) // 4), f"characters/4 (tiktoken unavailable: {exc})"
    return (
        lambda text: len(encoding.encode(text, disallowed_special=())),
        "tiktoken cl100k_base (works offline: LiteLLM ships the file), counted over the JSON of "
        "the `messages` array the server received — an approximation of DeepSeek's tokenizer",
    )


def _session(turns: int) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]], list[Any]]:
    """Per turn, the recorded three replies (tool-call ids made unique per turn); the recorded
    tool results by tool-call id; the recorded tools."""
    data = deepseek_recording()
    replies = [json.loads(r)["choices"][0]["message"] for r in data["responses"]]
    last_request = data["requests"][-1]
    results = {m["tool_call_id"]: m for m in last_request["messages"] if m["role"] == "tool"}
    per_turn: list[list[dict[str, Any]]] = []
    tool_messages: list[dict[str, Any]] = []
    for t in range(turns):
        turn_replies = []
        for reply in replies:
            reply = copy.deepcopy(reply)
            for call in reply.get("tool_calls") or []:
                new_id = f"{call['id']}_t{t}"
                tool_messages.append({**results[call["id"]], "tool_call_id": new_id})
                call["id"] = new_id
                call.pop("index", None)
            turn_replies.append(reply)
        per_turn.append(turn_replies)
    return per_turn, tool_messages, last_request.get("tools") or []


def _dropped(message: Any) -> dict[str, Any]:
    data = message.model_dump() if hasattr(message, "model_dump") else dict(message)
    out: dict[str, Any] = {"role": "assistant", "content": data.get("content")}
    if data.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": dict(c["function"])}
            for c in data["tool_calls"]
        ]
    return out


async def _run_policy(
    up: Upstream, policy: str, turns: int
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The session's request bodies, and the callback's stats with the prompt-cache tokens the
    client read from each reply's usage (`client_cache_read`, `client_prompt`)."""
    model = f"tok-{policy.split(',')[0].replace(' ', '-')}-{uuid.uuid4().hex[:6]}"
    per_turn, tool_messages, tools = _session(turns)
    results = {m["tool_call_id"]: m for m in tool_messages}
    for turn_replies in per_turn:
        up.script(model, *(Reply(message=r) for r in turn_replies))
    settings = ARMS[policy]
    cb = ReasoningCallback(**settings) if settings is not None else None
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = [cb] if cb is not None else []
    seen = {"client_cache_read": 0, "client_prompt": 0}
    system = [m for m in deepseek_recording()["requests"][0]["messages"] if m["role"] == "system"]
    messages: list[dict[str, Any]] = list(system)
    try:
        for t in range(turns):
            messages.append({"role": "user", "content": f"My guess is {(t % 6) + 1}"})
            for _ in range(3):
                response = await litellm.acompletion(
                    model=f"openai/{model}",
                    api_base=up.base_url,
                    api_key="k",
                    messages=messages,
                    tools=tools,
                )
                reply = response.choices[0].message
                usage = response.usage.model_dump()
                seen["client_prompt"] += usage["prompt_tokens"]
                seen["client_cache_read"] += (usage.get("prompt_tokens_details") or {}).get(
                    "cached_tokens"
                ) or 0
                messages.append(_dropped(reply))
                for call in messages[-1].get("tool_calls") or []:
                    messages.append(dict(results[call["id"]]))
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
        litellm.callbacks = []
    return up.bodies(model), {**(dict(cb.stats) if cb is not None else {}), **seen}


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of `a` and `b` (binary search over slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def run(turns: int) -> Section:
    section = Section("tokens", "Tokens and prompt-cache prefix per turn policy")
    count, how = _tokenizer()
    bodies: dict[str, list[dict[str, Any]]] = {}
    stats: dict[str, dict[str, int]] = {}
    with CachingUpstream(count) as up:
        for policy in POLICIES:
            bodies[policy], stats[policy] = asyncio.run(_run_policy(up, policy, turns))
    rows = []
    totals: dict[str, int] = {}
    shares: dict[str, float] = {}
    hits: dict[str, float] = {}
    for policy in POLICIES:
        texts = [
            json.dumps(b["messages"], ensure_ascii=False, separators=(",", ":"))
            for b in bodies[policy]
        ]
        tokens = [count(t) for t in texts]
        common = [_common_prefix(p, c) for p, c in itertools.pairwise(texts)]
        prefix = [n / len(c) for n, c in zip(common, texts[1:], strict=True)]
        intact = sum(n == len(p) - 1 for n, p in zip(common, texts, strict=False))
        # the first request of each turn (after the first) is where a turn rule can break it
        boundary = [prefix[i - 1] for i in range(3, len(texts), 3)]
        sent = sum(
            1
            for b in bodies[policy]
            for m in b["messages"]
            if m.get("role") == "assistant" and m.get("reasoning_content")
        )
        totals[policy] = sum(tokens)
        shares[policy] = sum(prefix) / len(prefix) if prefix else float("nan")
        seen = stats[policy]
        hits[policy] = seen["client_cache_read"] / max(1, seen["client_prompt"])
        refused = sum(deepseek_reasoning_required(b) is not None for b in bodies[policy])
        rows.append(
            [
                policy,
                str(len(texts)),
                str(tokens[0]),
                str(tokens[-1]),
                f"{median(tokens):.0f}",
                str(sum(tokens)),
                str(sent),
                f"{shares[policy]:.1%}",
                f"{min(boundary):.1%}" if boundary else "n/a",
                f"{intact} / {len(common)}",
                str(stats[policy].get("reasoning_tokens_sent", 0)),
                str(
                    stats["all_turns"].get("reasoning_tokens_sent", 0)
                    - stats[policy].get("reasoning_tokens_sent", 0)
                ),
                f"{hits[policy]:.1%}",
                str(seen.get("cache_read_tokens", "n/a")),
                f"{refused} / {len(texts)}",
            ]
        )
        print(
            f"  tokens {policy}: total {sum(tokens)} prefix share {shares[policy]:.1%}", flush=True
        )
    section.table(
        [
            "policy",
            "requests",
            "first request",
            "last request",
            "median",
            "session total",
            "assistant messages sent with reasoning",
            "mean share = byte-identical prefix of previous request",
            "worst share at a new turn",
            "requests extending the previous one intact",
            "reasoning tokens sent (callback's estimate, session)",
            "reasoning tokens saved vs all_turns",
            "prompt-cache hit ratio (replies' usage, as the client read it)",
            "cache-read tokens the callback counted",
            "requests a strict DeepSeek V4 refuses",
        ],
        rows,
    )
    base = totals["all_turns"]
    for policy in POLICIES[1:]:
        if policy == NO_CALLBACK:
            continue  # fewer tokens, but every tool loop refused (last column)
        section.summary.append(
            (
                f"session input tokens, {policy} / all_turns",
                f"{totals[policy] / base:.3f}x",
                "saves",
                verdict(totals[policy] <= base),
            )
        )
    section.summary.append(
        (
            f"byte-identical prefix share ({' / '.join(POLICIES)})",
            " / ".join(f"{shares[p]:.1%}" for p in POLICIES),
            "—",
            "info",
        )
    )
    section.note(
        f"session: the recorded DeepSeek tool loop (3 requests per turn: load_capability, then "
        f"get_player_name + roll_dice, then the answer) repeated for {turns} turns with unique "
        "tool-call ids, through `litellm.acompletion` (openai/ at the local server, tools as "
        "recorded), from a client that drops reasoning; `ReasoningCallback(policies={'*': ...})`, "
        f"the budget arm with `max_reasoning_tokens={BUDGET}`."
    )
    section.note(
        "reasoning tokens sent: the sum over the session of each request's decisions summary "
        "(`spend_logs_metadata.litellm_reasoning.reasoning_tokens.sent`, characters / 4), as "
        "`cb.stats['reasoning_tokens_sent']` counts it."
    )
    section.summary.append(
        (
            f"prompt-cache hit ratio ({' / '.join(POLICIES)})",
            " / ".join(f"{hits[p]:.1%}" for p in POLICIES),
            "—",
            "info",
        )
    )
    section.note(f"tokens: {how}.")
    section.note(
        f"prompt cache: the local server serves the leading whole {CACHE_BLOCK}-token units of a "
        "request that repeat its model's previous request byte for byte from a simulated cache "
        "and reports them in each reply's usage in DeepSeek's recorded shape "
        "(`prompt_cache_hit_tokens`, `prompt_tokens_details.cached_tokens`; "
        "shared/realdata/vercel-ai/deepseek/deepseek-tool-call.chunks.txt). The hit ratio is "
        "what the client read from LiteLLM's replies; the callback's `cache_read_tokens` counts "
        "the same replies. `no callback`: the same dropping client with no callback registered "
        "(what LiteLLM alone sends); its prefix is as stable as `all_turns`' but every tool loop "
        "goes without reasoning, which DeepSeek V4 in thinking mode refuses (last column, "
        "`testing.refusals.deepseek_reasoning_required` run on each body the server received)."
    )
    section.note(
        "prefix share: the longest common prefix of this request's `messages` JSON and the "
        "previous request's, over this request's length (bodies as the server parsed them, "
        "re-serialised compactly; the key order LiteLLM sent is kept). 'Intact': the previous "
        "request's messages (all but the closing `]`) are a prefix of this one, i.e. a prompt "
        "cache keyed on the previous request hits in full."
    )
    return section
