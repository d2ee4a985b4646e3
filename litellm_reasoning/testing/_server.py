"""What every local test server shares: per-model reply scripts, a record of every request body
(what reached the wire), and a threaded HTTP server on 127.0.0.1. Subclasses say how a scripted
reply is written in their provider's format."""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar

ReplyT = TypeVar("ReplyT")
ServerT = TypeVar("ServerT", bound="ScriptedServer[Any]")


class LocalHTTPServer(ThreadingHTTPServer):
    """A threaded local server for tests that open many connections at once: socketserver's
    listen backlog of 5 drops the SYNs of a burst of clients (150 conversations at once), and
    each dropped SYN costs its client a 1-3-7 s retransmit."""

    request_queue_size = 1024
    daemon_threads = True


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class ScriptedServer(Generic[ReplyT]):
    """Use as a context manager; `base_url` is what LiteLLM's `api_base` takes."""

    base_path = ""
    """Appended to `http://host:port` in `base_url`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._scripts: dict[str, deque[ReplyT]] = defaultdict(deque)
        self._default: dict[str, ReplyT] = {}
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._request = threading.local()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; with Nagle on, the body waits for the
            # client's delayed ACK (~40 ms a response).
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, "application/json", json.dumps({"data": []}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode(errors="replace")}
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.received.append(Received(self.path, body, headers))
                server._request.path = self.path
                self._send(*server.answer(body, server._next(server.model_of(self.path, body))))

            def _send(self, status: int, content_type: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = LocalHTTPServer((host, port), Handler)
        # A short poll: `shutdown` waits for the serving loop to wake (0.5 s by default, which
        # every test with a server of its own paid once).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def model_of(self, path: str, body: dict[str, Any]) -> str:
        """The model a request names (what replies are scripted under)."""
        return str(body.get("model", ""))

    def answer(self, body: dict[str, Any], reply: ReplyT | None) -> tuple[int, str, bytes]:
        """(status, content type, bytes) for a request `body` and its scripted `reply`."""
        raise NotImplementedError

    @property
    def path(self) -> str:
        """The path of the request being answered (on the thread answering it)."""
        return str(getattr(self._request, "path", ""))

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.base_path}"

    def script(self, model: str, *replies: ReplyT) -> None:
        """Queue `replies` for requests naming `model` (answered in order)."""
        with self._lock:
            self._scripts[model].extend(replies)

    def always(self, model: str, reply: ReplyT) -> None:
        """Answer every request naming `model` with `reply` once its queue is empty."""
        with self._lock:
            self._default[model] = reply

    def _next(self, model: str) -> ReplyT | None:
        with self._lock:
            queue = self._scripts.get(model)
            if queue:
                return queue.popleft()
            return self._default.get(model)

    def bodies(self, model: str | None = None) -> list[dict[str, Any]]:
        """Request bodies received, oldest first (only those naming `model`, if given)."""
        with self._lock:
            return [r.body for r in self.received if model is None or r.body.get("model") == model]

    def start(self: ServerT) -> ServerT:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self: ServerT) -> ServerT:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
