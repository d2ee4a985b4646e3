"""Run conformance cases through real LiteLLM and compare what reached the wire.

A case file is JSON: `{"about": ..., "cases": [case, ...]}`. A case:

* `messages`: the history. `reasoning` on an assistant message is its reasoning (absent: it came
  with none); `turn` on a user message is the client's flag; `tool_calls` / `tool_call_id` as usual.
* `expect`: the messages as the target must receive them. Every key an expected message names
  must match; a reasoning key (or `turn`) it does not name must be absent on the wire.
* optional `model` (a LiteLLM model, default `openai/conformance-model`; its api_base is always
  the local server), `dialects` / `policies` / `max_reasoning_tokens` (callback settings),
  `tools` (sent with the request),
  `params` (more LiteLLM keyword arguments, e.g. `thinking`, `max_tokens`), `clients` (`keeps`,
  `drops`; default both).
* optional `wire: "anthropic"`: the target is Claude behind a local Anthropic Messages server
  (`POST /v1/messages`, JSON and SSE). `reasoning` is then the reply's Anthropic thinking
  blocks (signed `thinking`, `redacted_thinking`), which a `keeps` client sends back as
  `thinking_blocks` and the server answers with in `drops` mode; `expect` is the `messages` of
  the Anthropic request body (`role`, `content` blocks). An assistant message's optional
  `blocks` is the reply's whole content in its order (interleaved thinking); its `reasoning`,
  `content` and `tool_calls` are then what LiteLLM makes of it. The server validates as Claude
  does (`AnthropicUpstream(strict=True)`).
* optional `wire: "gemini"`: the target is a `gemini/` model behind a local Gemini API server.
  An assistant message's `parts` are the reply's Gemini parts (thought text, text and function
  calls, with their `thoughtSignature`s); both clients play the conversation step by step and
  send each reply back as LiteLLM gave it (`keeps`: the whole message, thought signatures in
  `provider_specific_fields` included; `drops`: role, content and tool calls). A `tool` message
  names the call it answers by its place in the previous reply (`call`, default 0). `expect`
  is the `contents` of the Gemini request body (`role`, `parts`; an entry may name `role`
  only); function call ids, which LiteLLM makes up, are compared as `<id>`.

Every case runs for each call shape (acompletion, completion, Router async and sync), streamed and
not, and for each client: `keeps` sends the reasoning back itself as `reasoning_content`; `drops`
plays the conversation step by step against the local server, keeping only role, content and
tool calls of each reply, so every reasoning on the wire was restored by the callback.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.turns import TURN_KEY
from ..testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from ..testing.gemini_upstream import GeminiReply
from ..testing.upstream import Reply, Upstream
from ..wire import REASONING_KEYS
from . import conformance_wires as wires

CALLS = ("acompletion", "completion", "router.acompletion", "router.completion")
STREAMS = (False, True)
CLIENTS = ("keeps", "drops")
DEFAULT_MODEL = "openai/conformance-model"
_CHECKED_KEYS = REASONING_KEYS | {TURN_KEY}


@dataclass(frozen=True)
class Case:
    source: str
    index: int
    about: str
    raw: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{Path(self.source).stem}#{self.index + 1}"


@dataclass(frozen=True)
class Outcome:
    case: Case
    call: str
    stream: bool
    client: str
    ok: bool
    detail: str = ""


def load_cases(paths: Iterable[str | Path]) -> list[Case]:
    """Every case in the JSON files at `paths` (directories are searched recursively)."""
    files: list[Path] = []
    for path in map(Path, paths):
        files += sorted(path.rglob("*.json")) if path.is_dir() else [path]
    cases: list[Case] = []
    for file in files:
        document = json.loads(file.read_text(encoding="utf-8"))
        for index, raw in enumerate(document.get("cases", [])):
            cases.append(Case(str(file), index, str(raw.get("about", "")), raw))
    return cases


def compare(wire: list[Any], expect: list[dict[str, Any]]) -> str:
    """'' when `wire` matches `expect`, else the first difference in words."""
    if len(wire) != len(expect):
        return f"{len(wire)} messages on the wire, {len(expect)} expected"
    for index, (got, want) in enumerate(zip(wire, expect, strict=True)):
        if not isinstance(got, dict):
            return f"message {index}: not an object on the wire"
        for key, value in want.items():
            if got.get(key) != value:
                return f"message {index}: {key}={got.get(key)!r}, expected {value!r}"
        extra = sorted(k for k in got if k in _CHECKED_KEYS and k not in want)
        if extra:
            return f"message {index}: unexpected {', '.join(extra)} on the wire"
    return ""


def _reply_message(response: Any, chunks: list[Any] | None) -> dict[str, Any]:
    """The assistant message of a reply (a stream's, assembled), as a dict."""
    import litellm

    if chunks is not None:
        response = litellm.stream_chunk_builder(chunks=chunks)
    message: dict[str, Any] = response.choices[0].message.model_dump()
    return message


def _sync_call(target: Any, params: dict[str, Any], stream: bool) -> dict[str, Any]:
    response = target.completion(**params)
    chunks = list(response) if stream else None
    message = _reply_message(response, chunks)
    del response, chunks
    # LiteLLM stops reading a sync stream at its last event and leaves the HTTP line generator
    # suspended; if the cyclic GC finalises it later, inside httpcore's pool lock during the
    # next request on the same client, that thread deadlocks on the lock it holds. Finalise
    # it here, outside any request (unless the caller paused the GC and collects itself, as
    # the test suite does).
    if gc.isenabled():
        gc.collect()
    return message


class Runner:
    """Runs cases against one local upstream, one callback per case run."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    def _callback(self, case: Case) -> Any:
        from ..integration.reasoning_callback import ReasoningCallback

        return ReasoningCallback(
            dialects=case.raw.get("dialects"),
            policies=case.raw.get("policies"),
            max_reasoning_tokens=case.raw.get("max_reasoning_tokens"),
            # A sync stream is captured on LiteLLM's logging thread after the caller has it;
            # on a loaded machine (test lines side by side) that can take many seconds. A
            # request only waits while that very capture is open: a long bound costs nothing.
            capture_wait_seconds=60.0,
        )

    async def _call(
        self,
        call: str,
        model: str,
        messages: list[Any],
        stream: bool,
        tools: Any,
        base_url: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        import litellm

        base_url = base_url or self.upstream.base_url
        params: dict[str, Any] = {"messages": messages, "stream": stream, **(extra or {})}
        if tools:
            params["tools"] = tools
        if call.startswith("router."):
            router = litellm.Router(
                model_list=[
                    {
                        "model_name": "conformance",
                        "litellm_params": {
                            "model": model,
                            "api_base": base_url,
                            "api_key": "conformance",
                        },
                    }
                ],
                num_retries=0,
            )
            target: Any = router
            params["model"] = "conformance"
        else:
            target = litellm
            params.update(model=model, api_base=base_url, api_key="conformance")
        if call.endswith("acompletion"):
            response = await target.acompletion(**params)
            chunks = [chunk async for chunk in response] if stream else None
            return _reply_message(response, chunks)
        return await asyncio.to_thread(_sync_call, target, params, stream)

    async def run_one(self, case: Case, call: str, stream: bool, client: str) -> Outcome:
        import litellm

        model = str(case.raw.get("model") or DEFAULT_MODEL)
        wire_model = model.split("/", 1)[1] if "/" in model else model
        tools = case.raw.get("tools")
        extra = case.raw.get("params")
        messages: list[dict[str, Any]] = case.raw["messages"]
        anthropic = case.raw.get("wire") == "anthropic"
        if case.raw.get("wire") == "gemini":
            return await self._run_gemini(case, call, stream, client)
        server: Upstream | AnthropicUpstream = (
            wires.anthropic_upstream() if anthropic else self.upstream
        )
        base_url = server.base_url
        previous = litellm.callbacks
        # A fresh callback per run; LiteLLM's internal event lists would keep the old ones.
        litellm.logging_callback_manager._reset_all_callbacks()
        callback = self._callback(case)
        litellm.callbacks = [callback]
        try:
            history: list[dict[str, Any]] = []
            for message in messages:
                if client == "drops" and message.get("role") == "assistant":
                    if isinstance(server, AnthropicUpstream):
                        server.script(wire_model, wires.anthropic_reply_for(message))
                    else:
                        server.script(wire_model, wires.reply_for(message))
                    await self._call(call, model, list(history), stream, tools, base_url, extra)
                history.append(wires.client_message(message, keeps=client == "keeps"))
            if isinstance(server, AnthropicUpstream):
                server.always(wire_model, AnthropicReply([{"type": "text", "text": "ok"}]))
            else:
                server.always(wire_model, Reply(message={"content": "ok"}))
            before = len(server.bodies(wire_model))
            await self._call(call, model, history, stream, tools, base_url, extra)
            bodies = server.bodies(wire_model)
            if len(bodies) <= before:
                return Outcome(case, call, stream, client, False, "no request reached the server")
            detail = compare(bodies[-1].get("messages", []), case.raw["expect"])
            return Outcome(case, call, stream, client, not detail, _with_counts(detail, callback))
        except Exception as exc:
            failed = f"{type(exc).__name__}: {exc}"
            return Outcome(case, call, stream, client, False, _with_counts(failed, callback))
        finally:
            litellm.callbacks = previous

    async def _run_gemini(self, case: Case, call: str, stream: bool, client: str) -> Outcome:
        import litellm

        model = str(case.raw.get("model") or "gemini/gemini-3-pro-preview")
        wire_model = model.split("/", 1)[1]
        server = wires.gemini_upstream()
        previous = litellm.callbacks
        litellm.logging_callback_manager._reset_all_callbacks()
        callback = self._callback(case)
        litellm.callbacks = [callback]
        tools, extra = case.raw.get("tools"), case.raw.get("params")
        try:
            history: list[dict[str, Any]] = []
            reply: dict[str, Any] = {}
            for message in case.raw["messages"]:
                if message.get("role") == "assistant":
                    server.script(wire_model, GeminiReply(list(message["parts"])))
                    reply = await self._call(
                        call, model, list(history), stream, tools, server.base_url, extra
                    )
                    history.append(wires.gemini_client_message(reply, keeps=client == "keeps"))
                elif message.get("role") == "tool":
                    answered = reply["tool_calls"][int(message.get("call", 0))]
                    history.append(
                        {
                            "role": "tool",
                            "tool_call_id": answered["id"],
                            "content": message.get("content", ""),
                        }
                    )
                else:
                    history.append(wires.client_message(message, keeps=client == "keeps"))
            server.always(wire_model, GeminiReply([{"text": "ok"}]))
            before = len(server.requests_for(wire_model))
            await self._call(call, model, history, stream, tools, server.base_url, extra)
            bodies = server.requests_for(wire_model)
            if len(bodies) <= before:
                return Outcome(case, call, stream, client, False, "no request reached the server")
            contents = wires.without_call_ids(bodies[-1].get("contents", []))
            detail = compare(contents, case.raw["expect"])
            return Outcome(case, call, stream, client, not detail, _with_counts(detail, callback))
        except Exception as exc:
            failed = f"{type(exc).__name__}: {exc}"
            return Outcome(case, call, stream, client, False, _with_counts(failed, callback))
        finally:
            litellm.callbacks = previous

    async def run(
        self, cases: list[Case], progress: Callable[[int, int], None] | None = None
    ) -> list[Outcome]:
        outcomes: list[Outcome] = []
        for finished, case in enumerate(cases, 1):
            clients = case.raw.get("clients") or CLIENTS
            for call in CALLS:
                for stream in STREAMS:
                    for client in clients:
                        outcomes.append(await self.run_one(case, call, stream, client))
            if progress is not None:
                progress(finished, len(cases))
        return outcomes


_COUNTS = ("captured", "waited", "restored", "missing", "thinking_disabled", "thinking_stays_on")
"""The callback's counters a failing run's detail names (which path missed a record)."""


def _with_counts(detail: str, callback: Any) -> str:
    """`detail`, and for a failure the counters of the run's callback."""
    if not detail:
        return detail
    stats = callback.stats
    return detail + " [callback: " + ", ".join(f"{n}={stats[n]}" for n in _COUNTS) + "]"


PACKAGED_CASES = Path(__file__).resolve().parent.parent / "data" / "conformance"
"""The cases shipped in the wheel (`conformance/` in a checkout is the same directory)."""


def run_cases(
    cases: list[Case], jobs: int = 1, progress: Callable[[int, int], None] | None = None
) -> list[Outcome]:
    """Start a local upstream and run every case in every mode, in `jobs` processes (each with
    its own LiteLLM, callback and upstream: LiteLLM's callback list is process-global).
    `progress(done, total)` is called as cases finish."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if jobs > 1 and len(cases) > 1:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        done: list[Outcome] = []
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(run_cases, [case]) for case in cases]
            for finished, future in enumerate(as_completed(futures), 1):
                done += future.result()
                if progress is not None:
                    progress(finished, len(cases))
        return [o for case in cases for o in done if o.case.name == case.name]
    with Upstream() as upstream:
        return asyncio.run(Runner(upstream).run(cases, progress))


class Progress:
    """Cases done, their rate and the time left: a bar that rewrites itself on a terminal,
    plain lines otherwise (logs, CI)."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def line(self, done: int, total: int) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = done / elapsed
        left = (total - done) / rate if rate > 0 else float("nan")
        eta = f"{left:.0f} s left" if done < total else f"{elapsed:.0f} s in all"
        return f"{done}/{total} cases, {rate * 60:.1f} cases/min, {eta}"

    def __call__(self, done: int, total: int) -> None:
        if sys.stderr.isatty():
            width = 30
            bar = "#" * (width * done // total)
            end = "\n" if done == total else ""
            text = f"\r[{bar:<{width}}] {self.line(done, total)}"
            print(text, end=end, file=sys.stderr, flush=True)
        else:
            print(f"conformance: {self.line(done, total)}", file=sys.stderr, flush=True)


def table(outcomes: list[Outcome]) -> Iterator[str]:
    """Rows for a terminal, then the `N passed, N failed` line."""
    width = max([len(o.case.name) for o in outcomes] + [4])
    yield f"{'case':<{width}}  {'call':<18}  {'stream':<6}  {'client':<6}  result"
    for o in outcomes:
        result = "pass" if o.ok else f"FAIL  {o.detail}"
        stream = "yes" if o.stream else "no"
        yield f"{o.case.name:<{width}}  {o.call:<18}  {stream:<6}  {o.client:<6}  {result}"
    passed = sum(o.ok for o in outcomes)
    yield f"{passed} passed, {len(outcomes) - passed} failed"


def default_paths() -> list[str]:
    """`./conformance` in a checkout, else the cases in the installed package."""
    return ["conformance"] if Path("conformance").is_dir() else [str(PACKAGED_CASES)]


def main(paths: list[str], jobs: int | None = None, as_json: bool = False) -> int:
    paths = paths or default_paths()
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        print("no such case file or directory: " + ", ".join(missing), file=sys.stderr)
        return 2
    cases = load_cases(paths)
    if not cases:
        print("no conformance cases found in " + ", ".join(paths), file=sys.stderr)
        return 2
    outcomes = run_cases(cases, jobs or min(4, os.cpu_count() or 1), Progress())
    if as_json:
        rows = [
            {
                "case": o.case.name,
                "call": o.call,
                "stream": o.stream,
                "client": o.client,
                "ok": o.ok,
                "detail": o.detail,
            }
            for o in outcomes
        ]
        passed = sum(o.ok for o in outcomes)
        print(json.dumps({"passed": passed, "failed": len(outcomes) - passed, "runs": rows}))
    else:
        for line in table(outcomes):
            print(line)
    return 0 if all(o.ok for o in outcomes) else 1
