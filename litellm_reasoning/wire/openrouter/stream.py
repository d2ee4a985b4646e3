"""Streamed OpenRouter `reasoning_details`, merged back into the items OpenRouter meant.

OpenRouter streams each detail in pieces: deltas with the same `(type, index)` belong to one
item; `text`, `summary` and `data` arrive in fragments, and the `signature` of a Claude text item
comes in a later delta of its own (recorded: an empty `signature` first, the real one after the
text). Sending the fragments back unmerged is a 400 (provider rules §8c). LiteLLM's assembled
stream loses `reasoning_details` altogether, and drops the signature-only delta from the chunks
it yields, so the callback feeds the raw deltas here.

An assembly is complete only when its stream finished and every item that its upstream signs
has its signature: an incomplete item is never handed out as if it were whole. Pure: no LiteLLM,
no I/O.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

CONCATENATED = ("text", "summary", "data")
"""Fields that arrive in fragments."""

SIGNED_FORMATS = frozenset({"anthropic-claude-v1", "google-gemini-v1"})
"""Formats whose `reasoning.text` items are useless without their signature."""


@dataclass
class DetailsAssembly:
    """The reasoning details of one streamed choice, merged per `(type, index)`, in order."""

    items: dict[tuple[Any, Any], dict[str, Any]] = field(default_factory=dict)
    finished: bool = False

    def add(self, deltas: Iterable[Any]) -> None:
        for delta in deltas:
            if not isinstance(delta, dict):
                continue
            key = (delta.get("type"), delta.get("index"))
            item = self.items.get(key)
            if item is None:
                self.items[key] = dict(delta)
                continue
            for name, value in delta.items():
                if name in CONCATENATED and isinstance(value, str):
                    before = item.get(name)
                    item[name] = (before if isinstance(before, str) else "") + value
                elif value not in (None, "") or name not in item:
                    # A later non-empty value (the signature) replaces an empty placeholder.
                    item[name] = value

    def complete(self) -> list[dict[str, Any]] | None:
        """The merged items, or None while the stream is unfinished or a signature is missing."""
        if not self.finished or not self.items:
            return None
        items = [dict(item) for item in self.items.values()]
        for item in items:
            signed = item.get("format") in SIGNED_FORMATS and item.get("type") == "reasoning.text"
            if signed and not item.get("signature"):
                return None
        return items


class StreamedDetails:
    """Assemblies of streams in flight, by `(response id, choice index)`; bounded, thread-safe."""

    def __init__(self, max_streams: int = 1000) -> None:
        self._max_streams = max_streams
        self._streams: OrderedDict[Hashable, DetailsAssembly] = OrderedDict()
        self._lock = threading.Lock()

    def feed(self, key: Hashable, deltas: Iterable[Any] | None, finished: bool) -> None:
        deltas = list(deltas or ())
        if not deltas and not finished:
            return
        with self._lock:
            assembly = self._streams.get(key)
            if assembly is None:
                if not deltas:
                    return
                assembly = self._streams[key] = DetailsAssembly()
                while len(self._streams) > self._max_streams:
                    self._streams.popitem(last=False)
            assembly.add(deltas)
            assembly.finished = assembly.finished or finished

    def take(self, key: Hashable) -> list[dict[str, Any]] | None:
        """The complete details of a finished stream, once (None: none, or incomplete)."""
        with self._lock:
            assembly = self._streams.pop(key, None)
        return assembly.complete() if assembly is not None else None
