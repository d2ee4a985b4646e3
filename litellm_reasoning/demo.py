"""`litellm-reasoning demo`: a real recorded DeepSeek tool loop, replayed through LiteLLM with
the callback, by a client that throws reasoning away. No API key, no network: a local server on
127.0.0.1 answers with the provider's recorded replies, and the demo prints, request by request,
what the client sent and what reached the provider.
"""

from __future__ import annotations

import asyncio
import json
import os
from importlib import resources
from importlib.metadata import version
from typing import Any

from .testing.upstream import Reply, Upstream

MODEL = "deepseek/deepseek-reasoner"
WIRE_MODEL = "deepseek-reasoner"


def _load() -> dict[str, Any]:
    data = resources.files("litellm_reasoning") / "data" / "deepseek_tool_loop.json"
    loaded: dict[str, Any] = json.loads(data.read_text(encoding="utf-8"))
    return loaded


def _dropped(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a client that keeps only role, content and tool calls sends."""
    keep = ("role", "content", "tool_calls", "tool_call_id")
    return [{k: m[k] for k in keep if k in m} for m in messages]


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _describe(
    index: int, sent: dict[str, Any], wire: dict[str, Any], recorded: dict[str, Any] | None
) -> str:
    role = str(wire.get("role"))
    if role != "assistant":
        return f"  [{index}] {role:<9} {_short(str(wire.get('content') or ''), 50)}"
    had = "kept" if sent.get("reasoning_content") else "dropped"
    got = wire.get("reasoning_content")
    if got:
        what = f"reasoning_content restored ({len(got)} chars): “{_short(got, 48)}”"
    elif got == "":
        what = 'reasoning_content "" (none was ever produced; DeepSeek wants the field)'
    else:
        what = "no reasoning_content (earlier turn)"
    check = ""
    if recorded is not None:
        same = recorded.get("reasoning_content") == got
        check = "  = recorded request" if same else "  ≠ recorded request"
    return f"  [{index}] assistant client {had}; provider got {what}{check}"


async def _run(stream: bool) -> int:
    import litellm

    from .reasoning_callback import ReasoningCallback

    recording = _load()
    callback = ReasoningCallback()
    litellm.callbacks = [callback]
    failures = 0
    with Upstream() as upstream:
        for raw in recording["responses"]:
            if stream:
                message = json.loads(raw)["choices"][0]["message"]
                upstream.script(WIRE_MODEL, Reply(message=message))
            else:
                upstream.script(WIRE_MODEL, Reply(raw_body=raw))
        print("litellm-reasoning demo: a real DeepSeek tool loop (recorded), replayed through")
        print(f"LiteLLM {version('litellm')} with ReasoningCallback on the in-memory store.")
        print(f"The client drops every reasoning field. Streaming: {'yes' if stream else 'no'}.\n")
        for step, recorded in enumerate(recording["requests"], start=1):
            messages = _dropped(recorded["messages"])
            response = await litellm.acompletion(
                model=MODEL,
                messages=messages,
                tools=recorded.get("tools"),
                api_base=upstream.base_url,
                api_key="demo",
                stream=stream,
            )
            if stream:
                async for _ in response:
                    pass
            wire = upstream.bodies(WIRE_MODEL)[-1]["messages"]
            print(f"request {step}: the client sent {len(messages)} messages, no reasoning at all")
            for i, (sent, got) in enumerate(zip(messages, wire, strict=True)):
                line = _describe(i, sent, got, recorded["messages"][i])
                failures += "≠" in line
                if got.get("role") == "assistant" or i == len(wire) - 1:
                    print(line)
            print()
        # A new question without tools: DeepSeek only needs the current turn then.
        upstream.script(WIRE_MODEL, Reply(message={"content": "(demo reply: not a recording)"}))
        messages = [
            *_dropped(recording["requests"][-1]["messages"]),
            {"role": "user", "content": "Thanks! Another round?"},
        ]
        await litellm.acompletion(
            model=MODEL, messages=messages, api_base=upstream.base_url, api_key="demo"
        )
        wire = upstream.bodies(WIRE_MODEL)[-1]["messages"]
        print("request 4: a new user turn, no tools: earlier turns carry no reasoning")
        for i, got in enumerate(wire):
            if got.get("role") == "assistant":
                print(_describe(i, messages[i], got, None))
                failures += "reasoning_content" in got
        print(f"\ncallback stats: {dict(sorted(callback.stats.items()))}")
        print(
            "result: "
            + ("every request matched the rule" if not failures else f"{failures} mismatches")
        )
    return 1 if failures else 0


def main(stream: bool = False) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return asyncio.run(_run(stream))
