"""`litellm-reasoning demo`: a real recorded DeepSeek tool loop, replayed through LiteLLM with
the callback, by a client that throws reasoning away. No API key, no network: a local server on
127.0.0.1 answers with the provider's recorded replies, and the demo prints, request by request,
what the client sent and what reached the provider.

`--proxy` does the same through the real LiteLLM proxy (`litellm --config`, the callback on the
proxy's default SQLite store in a temporary data directory), driven by the official `openai`
client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from importlib import resources
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ..testing.upstream import Reply, Upstream

MODEL = "deepseek/deepseek-reasoner"
WIRE_MODEL = "deepseek-reasoner"
PROXY_GROUP = "deepseek"

Send = Callable[[list[dict[str, Any]], "list[dict[str, Any]] | None"], Awaitable[None]]
"""Sends one request (messages, tools) and reads its reply to the end."""


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


def _script(upstream: Upstream, recording: dict[str, Any], stream: bool) -> None:
    for raw in recording["responses"]:
        if stream:
            message = json.loads(raw)["choices"][0]["message"]
            upstream.script(WIRE_MODEL, Reply(message=message))
        else:
            upstream.script(WIRE_MODEL, Reply(raw_body=raw))


async def _replay(upstream: Upstream, recording: dict[str, Any], send: Send) -> int:
    """Drive the recorded loop through `send`, print what the provider got; the mismatches."""
    failures = 0
    for step, recorded in enumerate(recording["requests"], start=1):
        messages = _dropped(recorded["messages"])
        await send(messages, recorded.get("tools"))
        wire = upstream.bodies(WIRE_MODEL)[-1]["messages"]
        print(f"request {step}: the client sent {len(messages)} messages, no reasoning at all")
        if len(wire) != len(messages):
            print(f"  the provider got {len(wire)} messages instead of {len(messages)}")
            failures += 1
            continue
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
    await send(messages, None)
    wire = upstream.bodies(WIRE_MODEL)[-1]["messages"]
    print("request 4: a new user turn, no tools: earlier turns carry no reasoning")
    for i, got in enumerate(wire):
        if got.get("role") == "assistant":
            print(_describe(i, messages[i], got, None))
            failures += "reasoning_content" in got
    return failures


def _result(failures: int) -> str:
    return "result: " + (
        "every request matched the rule" if not failures else f"{failures} mismatches"
    )


async def _run(stream: bool, summary: dict[str, Any]) -> int:
    import litellm

    from ..integration.reasoning_callback import ReasoningCallback

    recording = _load()
    with (
        tempfile.TemporaryDirectory(prefix="litellm-reasoning-demo-") as tmp,
        Upstream() as upstream,
    ):
        # The embedded default store (SQLite), in a directory the demo removes afterwards.
        store_url = f"sqlite:///{tmp}/reasoning.db"
        callback = ReasoningCallback(store=store_url)
        litellm.callbacks = [callback]
        _script(upstream, recording, stream)
        print("litellm-reasoning demo: a real DeepSeek tool loop (recorded), replayed through")
        print(f"LiteLLM {version('litellm')} with ReasoningCallback on the embedded SQLite store.")
        print(f"The client drops every reasoning field. Streaming: {'yes' if stream else 'no'}.\n")

        async def send(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> None:
            extra: dict[str, Any] = {"tools": tools} if tools else {}
            response = await litellm.acompletion(
                model=MODEL,
                messages=messages,
                api_base=upstream.base_url,
                api_key="demo",
                stream=stream,
                **extra,
            )
            if stream:
                async for _ in response:
                    pass

        failures = await _replay(upstream, recording, send)
        print(f"\ncallback stats: {dict(sorted(callback.stats.items()))}")
        callback.store.close()
        summary.update(stats=dict(sorted(callback.stats.items())), store=_store_summary(store_url))
        print(f"store: {summary['store']}")
        print(_result(failures))
    summary["mismatches"] = failures
    return 1 if failures else 0


def _store_summary(url: str) -> str:
    from ..stores import open_backend

    try:
        store = open_backend(url)
        try:
            rows = [
                row
                for tenant in store.tenants()
                for row in store.list_records(tenant.scope, limit=tenant.records)
            ]
        finally:
            store.close()
    except Exception as exc:
        return f"could not read it ({type(exc).__name__}: {exc})"
    copies = sum(1 for row in rows if row.record is not None and row.record.superseded)
    if not copies:
        return f"{len(rows)} records"
    # Tool-call records are also filed under release 0.3.0's keys, for its replicas.
    return f"{len(rows) - copies} records (+{copies} copies for 0.3.0 replicas)"


async def _run_proxy(stream: bool, summary: dict[str, Any]) -> int:
    from ..testing.proxy import INSTALL_HINT, ProxyUnavailable, litellm_executable, run_proxy

    try:
        litellm_executable()
        import openai
    except (ProxyUnavailable, ImportError) as exc:
        print(f"litellm-reasoning demo --proxy: {exc}", file=sys.stderr)
        print(f"install the proxy with: {INSTALL_HINT}", file=sys.stderr)
        return 2

    recording = _load()
    with tempfile.TemporaryDirectory(prefix="litellm-reasoning-demo-") as tmp, Upstream() as up:
        _script(up, recording, stream)
        data_home = Path(tmp) / "data"
        store_url = f"sqlite:///{data_home / 'litellm-reasoning' / 'reasoning.db'}"
        config = {
            "model_list": [
                {
                    "model_name": PROXY_GROUP,
                    "litellm_params": {"model": MODEL, "api_base": up.base_url, "api_key": "demo"},
                }
            ],
            "litellm_settings": {"callbacks": "litellm_reasoning.callback"},
        }
        print("litellm-reasoning demo --proxy: a real DeepSeek tool loop (recorded), replayed")
        print(f"through the LiteLLM {version('litellm')} proxy (`litellm --config`, callbacks:")
        print("litellm_reasoning.callback) on its default store, a SQLite file in a temporary")
        print("XDG_DATA_HOME. The official openai client keeps only role, content and tool calls.")
        print(f"Streaming: {'yes' if stream else 'no'}. Starting the proxy (10-40 s)…", flush=True)
        env = {"XDG_DATA_HOME": str(data_home)}
        with run_proxy(config, Path(tmp) / "proxy", env=env) as proxy:
            print(f"proxy live on {proxy.url} after {proxy.startup_seconds:.1f} s\n")
            async with openai.AsyncOpenAI(
                base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
            ) as client:

                async def send(
                    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
                ) -> None:
                    extra: dict[str, Any] = {"tools": tools} if tools else {}
                    completions: Any = client.chat.completions  # plain dicts, as a client sends
                    response = await completions.create(
                        model=PROXY_GROUP, messages=messages, stream=stream, **extra
                    )
                    if stream:
                        async for _ in response:
                            pass

                try:
                    failures = await _replay(up, recording, send)
                except openai.APIError as exc:
                    print(f"the proxy answered with an error: {exc}\nproxy log tail:")
                    print(proxy.log_tail(30))
                    failures = 1
        summary["store"] = _store_summary(store_url)
        print(f"\nstore {store_url}: {summary['store']} (deleted with the temp dir)")
        print(_result(failures))
    summary["mismatches"] = failures
    return 1 if failures else 0


def main(stream: bool = False, proxy: bool = False, as_json: bool = False) -> int:
    """The demo; `as_json`: the narrative goes to stderr, one JSON summary to stdout."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    summary: dict[str, Any] = {"proxy": proxy, "stream": stream}
    run = _run_proxy(stream, summary) if proxy else _run(stream, summary)
    if not as_json:
        return asyncio.run(run)
    with contextlib.redirect_stdout(sys.stderr):
        code = asyncio.run(run)
    print(json.dumps({**summary, "ok": code == 0, "exit_code": code}))
    return code
