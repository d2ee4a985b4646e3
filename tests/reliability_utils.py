"""What the reliability suites share: a local server that serves a recorded SSE stream and breaks
it on purpose, the recorded streams split into events, and a callback's stored records.

`CutServer` answers each request naming a model with that model's next `Plan`: the first
`events` SSE events of a recording, then one of the faults a real connection has:

* `eof`: the server closes the connection (no `Content-Length`, so the client sees a clean end
  of the body: what a provider or load balancer dropping the connection looks like over
  HTTP/1.1 with `Connection: close`);
* `chunked`: chunked transfer encoding, closed without the terminating chunk (the client sees a
  truncated body: `RemoteProtocolError`);
* `stall`: the server stops sending and keeps the connection open (the client's timeout acts);
* `full`: every event, the stream as recorded.

`half` additionally sends the first half of the next event's bytes before the fault, so a cut
falls inside an event (in the middle of a signature, say) and not only between events.
A plan may instead carry a JSON body (`json_body`, `status`). Each model has one plan for
streaming requests and one for the others, answered to every such request (a retry meets the
same fault).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import yaml

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.testing._server import LocalHTTPServer

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"


def recorded_events(cassette: str, interaction: int = 0) -> list[str]:
    """The SSE events of a recorded response body, each with its blank-line terminator."""
    raw = yaml.safe_load((CASSETTES / f"{cassette}.yaml").read_text(encoding="utf-8"))
    body: str = raw["interactions"][interaction]["response"]["body"]["string"]
    return [event + "\n\n" for event in body.split("\n\n") if event.strip()]


def event_data(event: str) -> dict[str, Any] | None:
    """The JSON of an event's `data:` line (None for `[DONE]` and non-JSON data)."""
    for line in event.splitlines():
        if line.startswith("data:"):
            data = line[len("data:") :].strip()
            try:
                parsed = json.loads(data)
            except ValueError:
                return None
            return parsed if isinstance(parsed, dict) else None
    return None


@dataclass
class Plan:
    events: list[str] | None = None
    cut: int | None = None
    """How many events are sent before the fault (None: all of them)."""
    how: str = "full"
    """`full`, `eof`, `chunked` or `stall` (see the module docstring)."""
    half: bool = False
    json_body: dict[str, Any] | None = None
    status: int = 200
    delay: float = 0.0
    """Seconds between two events (a provider that streams slowly)."""


class CutServer:
    """A local server on 127.0.0.1; `base_url` is what LiteLLM's `api_base` takes."""

    def __init__(self) -> None:
        self._plans: dict[tuple[str, bool], Plan] = {}
        self._bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw or b"{}")
                with server._lock:
                    server._bodies.append(body)
                    plan = server._plans.get((str(body.get("model", "")), bool(body.get("stream"))))
                if plan is None:
                    self._json(500, {"error": {"message": "no plan for this model"}})
                elif plan.json_body is not None:
                    self._json(plan.status, plan.json_body)
                else:
                    self._stream(plan)

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, plan: Plan) -> None:
                events = plan.events or []
                cut = len(events) if plan.cut is None else plan.cut
                pieces = [event.encode() for event in events[:cut]]
                if plan.half and cut < len(events):
                    nxt = events[cut].encode()
                    pieces.append(nxt[: len(nxt) // 2])
                chunked = plan.how == "chunked"
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                if chunked:
                    self.send_header("transfer-encoding", "chunked")
                else:
                    self.send_header("connection", "close")
                self.end_headers()
                try:
                    for piece in pieces:
                        self.wfile.write(
                            b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
                        )
                        self.wfile.flush()
                        if plan.delay:
                            time.sleep(plan.delay)
                    if plan.how == "full" and chunked:
                        self.wfile.write(b"0\r\n\r\n")
                    if plan.how == "stall":
                        server._released.wait(30)
                except OSError:
                    pass  # the client went away: what these tests provoke
                self.close_connection = True

        self._server = LocalHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll: `shutdown` waits for the serving loop to wake (0.5 s by default, which
        # every test with a server of its own paid once).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def plan(self, model: str, stream: Plan, other: Plan | None = None) -> None:
        """How to answer `model`'s streaming requests (`stream`) and the others (`other`)."""
        with self._lock:
            self._plans[(model, True)] = stream
            if other is not None:
                self._plans[(model, False)] = other

    def bodies(self, model: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [b for b in self._bodies if model is None or b.get("model") == model]

    def __enter__(self) -> CutServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()


def stored(callback: ReasoningCallback) -> list[Reasoning]:
    """Every live record the callback's store holds, whatever its tenant."""
    store = callback.store
    return [
        row.record
        for tenant in store.tenants()
        for row in store.list_records(tenant.scope, limit=100_000)
        if row.record is not None
    ]


def openrouter_stream(text: str, signature: str, chunk_id: str, call_id: str) -> list[str]:
    """The SSE events OpenRouter sends for a Claude tool call with signed reasoning: the text in
    two `reasoning_details` pieces, the signature in a later delta of its own, then the call."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        payload = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "anthropic/claude-sonnet-4.5",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return "data: " + json.dumps(payload) + "\n\n"

    detail = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": "f"}}
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning": text[:5], "reasoning_details": [{**detail, "text": text[:5]}]}),
        chunk({"reasoning": text[5:], "reasoning_details": [{**detail, "text": text[5:]}]}),
        chunk({"reasoning_details": [{**detail, "text": "", "signature": signature}]}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
        "data: [DONE]\n\n",
    ]
