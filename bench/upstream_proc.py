"""The local OpenAI-compatible `Upstream` (or the Anthropic-format `AnthropicUpstream`), in a
process of its own, so the benchmark's client (and LiteLLM, in the SDK sections) never shares a
GIL with the server it measures against.

    python bench/upstream_proc.py SPEC.json

SPEC: `{"kind": "openai" | "anthropic", "always": {"<model>": <reply>}}`, the reply an assistant
message (openai) or a list of content blocks (anthropic). Prints `READY <base_url>` once serving,
then serves until stdin closes or the process is terminated.

The servers write a response's headers and body in two `send`s; with Nagle's algorithm on, the
body then waits for the client's delayed ACK (~40 ms on Linux), a stall no real server has that
would hide what LiteLLM and the callback cost. The benchmark's server turns Nagle off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def no_delay(server: Any) -> Any:
    """`server` (a `ScriptedServer`) with Nagle's algorithm off on every connection it accepts."""
    http = server._server  # the ThreadingHTTPServer inside
    accept = http.get_request

    def get_request() -> tuple[socket.socket, Any]:
        connection, address = accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address

    http.get_request = get_request
    return server


def report_restored(server: Any) -> None:
    """Answer with the scripted reply, its `content` replaced by `"<with reasoning>/<assistant
    messages>"` of the request (what the client learns of the restoring without reading the
    server's memory), and keep no request bodies (long histories under load)."""
    answer = server.answer

    def reporting(body: dict[str, Any], reply: Any) -> Any:
        server.received.clear()
        messages = [m for m in body.get("messages", []) if m.get("role") == "assistant"]
        carried = sum(1 for m in messages if m.get("reasoning_content"))
        if reply is not None and reply.message is not None:
            content = f"{carried}/{len(messages)}"
            message = {**reply.message, "content": content}
            if message.get("tool_calls"):
                # A scripted call without an id gets a new one per reply, as DeepSeek's do.
                message["tool_calls"] = [
                    {**call, "id": call.get("id") or f"call_00_{uuid.uuid4().hex[:24]}"}
                    for call in message["tool_calls"]
                ]
            reply = dataclasses.replace(reply, message=message)
        return answer(body, reply)

    server.answer = reporting


class Tally:
    """Every request's assistant messages, refused or answered: what reached the wire."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts = {"requests": 0, "assistant": 0, "carried": 0, "refused": 0}

    def count(self, body: dict[str, Any]) -> None:
        messages = [m for m in body.get("messages", []) if m.get("role") == "assistant"]
        with self.lock:
            self.counts["requests"] += 1
            self.counts["assistant"] += len(messages)
            self.counts["carried"] += sum(1 for m in messages if m.get("reasoning_content"))


def strict(server: Any, rules: dict[str, str], tally: Tally) -> None:
    """Refuse like the provider (`testing.refusals`, chosen per model by `rules`:
    `{"<model>": "kimi" | "deepseek"}`), and tally every request before it is judged."""
    from litellm_reasoning.testing import refusals

    checks = {
        "kimi": refusals.kimi_reasoning_required,
        "deepseek": refusals.deepseek_reasoning_required,
    }
    answer = server.answer

    def judging(body: dict[str, Any], reply: Any) -> Any:
        tally.count(body)
        server.received.clear()
        rule = rules.get(str(body.get("model")))
        refused = checks[rule](body) if rule else None
        if refused is not None:
            with tally.lock:
                tally.counts["refused"] += 1
            return refused[0], "application/json", json.dumps(refused[1]).encode()
        return answer(body, reply)

    server.answer = judging


def main(spec_path: str) -> None:
    from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
    from litellm_reasoning.testing.upstream import Reply, Upstream

    spec = json.loads(Path(spec_path).read_text())
    server: Any
    if spec.get("kind") == "anthropic":
        server = AnthropicUpstream()
        for model, content in spec.get("always", {}).items():
            server.always(model, AnthropicReply(content=content))
    else:
        server = Upstream()
        for model, message in spec.get("always", {}).items():
            server.always(model, Reply(message=message))
    if spec.get("report"):
        report_restored(server)
    tally = Tally()
    if spec.get("strict"):
        strict(server, spec["strict"], tally)
    with no_delay(server):
        print(f"READY {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.read()  # until the parent closes our stdin (or dies)
    print("TALLY " + json.dumps(tally.counts), flush=True)


@contextlib.contextmanager
def upstream_process(
    always: dict[str, Any],
    kind: str = "openai",
    *,
    report: bool = False,
    strict: dict[str, str] | None = None,
    tally: dict[str, int] | None = None,
) -> Iterator[str]:
    """Start the server process; yield its base_url; stop it afterwards. `report`: see
    `report_restored`; `strict`: see `strict`, its counts put into `tally` at the end."""
    with tempfile.TemporaryDirectory(prefix="bench-upstream-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(
            json.dumps({"kind": kind, "always": always, "report": report, "strict": strict})
        )
        process = subprocess.Popen(
            [sys.executable, __file__, str(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            text=True,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            if not line.startswith("READY "):
                raise RuntimeError(f"upstream process did not start: {line!r}")
            yield line.split(" ", 1)[1]
        finally:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            try:
                rest = process.stdout.read() if process.stdout is not None else ""
                for line in rest.splitlines():
                    if line.startswith("TALLY ") and tally is not None:
                        tally.update(json.loads(line.split(" ", 1)[1]))
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


if __name__ == "__main__":
    main(sys.argv[1])
