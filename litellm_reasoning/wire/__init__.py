"""The one registry of the provider families: dialects by name (how a target wants reasoning
on the messages it is sent) and adapters by LiteLLM provider (what a family does around
LiteLLM beside rendering: reading its replies and streams).

One adapter module per provider family (`wire/<family>.py` or `wire/<family>/`); every dialect
class it defines with a `name` of its own, and every adapter class, is registered here by
finding it, so a new provider is its adapter and its rows in the model table
(`data/model_table.json`, whose `dialects` list must name exactly what is registered: checked at
import). The LiteLLM layer reaches a family only through here."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import Any

from ..core.dialect import REASONING_KEYS, Dialect, strip_reasoning
from ..core.model_table import DIALECT_NAMES
from ..core.reasoning import Reasoning
from ._base import BaseAdapter, BaseDialect, CallParts, ReplyRead
from .anthropic import messages as messages_blocks
from .openai_responses import input_items as responses_items

# The two entry points whose request format is a provider API's own reach that family's pure
# format work here, like everything else of a family: `/v1/messages` (the Anthropic Messages
# API's blocks, SSE and usage: `messages_blocks`) and `responses` (the Responses API's input
# items and `reasoning.context`: `responses_items`).

for _module in pkgutil.walk_packages(__path__, __name__ + "."):
    importlib.import_module(_module.name)


def _subclasses(base: type[Any]) -> list[type[Any]]:
    found, classes = [], list(base.__subclasses__())
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        found.append(cls)
    return found


def _found() -> dict[str, Dialect]:
    out: dict[str, Dialect] = {}
    for cls in _subclasses(BaseDialect):
        name = cls.__dict__.get("name")  # its own: a subclass inherits its parent's
        if name:
            if name in out:
                raise RuntimeError(f"two dialects named {name!r}")
            out[name] = cls()
    return out


_DIALECTS = _found()

if set(_DIALECTS) != DIALECT_NAMES:  # the model table's list of names is this registry's
    raise RuntimeError(f"dialect names out of step: {sorted(set(_DIALECTS) ^ DIALECT_NAMES)}")


def get_dialect(name: str) -> Dialect:
    """The dialect called `name`; a clear error lists the known ones."""
    try:
        return _DIALECTS[name]
    except KeyError:
        raise ValueError(
            f"unknown dialect {name!r}; known: {', '.join(sorted(_DIALECTS))}"
        ) from None


def dialect_names() -> list[str]:
    return sorted(_DIALECTS)


_ADAPTERS: tuple[BaseAdapter, ...] = tuple(cls() for cls in _subclasses(BaseAdapter))
_BY_PROVIDER: dict[str, BaseAdapter] = {}
for _adapter in _ADAPTERS:
    for _provider in _adapter.providers:
        if _BY_PROVIDER.setdefault(_provider, _adapter) is not _adapter:
            raise RuntimeError(f"two adapters read the replies of {_provider!r}")
_NO_ADAPTER = BaseAdapter()


def _overriding(name: str) -> tuple[BaseAdapter, ...]:
    """The adapters with a hook `name` of their own (the others' does nothing)."""
    default = getattr(BaseAdapter, name)
    return tuple(a for a in _ADAPTERS if getattr(type(a), name) is not default)


_COMPLETING = _overriding("complete_message")
_RETRY_READERS = _overriding("retried_by_litellm")
_STREAM_WATCHERS = _overriding("watch_raw_stream")
_CHUNK_READERS = _overriding("read_raw_chunk")
_CONVERSE_WRITERS = _overriding("converse_block")
_ENDPOINT_ISSUERS = frozenset().union(*(adapter.endpoint_issuers for adapter in _ADAPTERS))


def adapter_for(provider: str | None) -> BaseAdapter:
    """The adapter reading replies of LiteLLM's `provider` (one that reads nothing when no
    family names it)."""
    return _BY_PROVIDER.get(provider or "", _NO_ADAPTER)


def complete_message(message: dict[str, Any], choice: Any, number: int, parts: CallParts) -> None:
    """What every adapter puts back on a reply's assembled `message` (`BaseAdapter`)."""
    for adapter in _COMPLETING:
        adapter.complete_message(message, choice, number, parts)


def watch_raw_stream(parts: CallParts) -> None:
    """An OpenAI-shaped stream is starting: every adapter that reads raw chunks is told."""
    for adapter in _STREAM_WATCHERS:
        adapter.watch_raw_stream(parts)


def read_raw_chunk(parts: CallParts, chunk: dict[str, Any]) -> None:
    """One raw chunk of a watched stream, to every adapter that reads them."""
    for adapter in _CHUNK_READERS:
        adapter.read_raw_chunk(parts, chunk)


def converse_block(block: Any) -> dict[str, Any] | None:
    """The Bedrock Converse block an adapter makes of a thinking `block` LiteLLM would lose
    (`BaseAdapter.converse_block`; None: LiteLLM's own)."""
    for adapter in _CONVERSE_WRITERS:
        made = adapter.converse_block(block)
        if made is not None:
            return made
    return None


def retried_by_litellm(restored: Sequence[Reasoning], body: Any) -> bool:
    """Whether `body` is LiteLLM's own retry of a refusal of the `restored` records
    (`BaseAdapter.retried_by_litellm`), which stays as LiteLLM made it."""
    return any(adapter.retried_by_litellm(restored, body) for adapter in _RETRY_READERS)


def issued_by_endpoint(provider: str | None) -> bool:
    """Whether `provider`'s reasoning blobs are made by the serving endpoint itself (so a
    record goes back only to the same `api_base`)."""
    return provider in _ENDPOINT_ISSUERS


__all__ = [
    "REASONING_KEYS",
    "BaseAdapter",
    "CallParts",
    "Dialect",
    "ReplyRead",
    "adapter_for",
    "complete_message",
    "converse_block",
    "dialect_names",
    "get_dialect",
    "issued_by_endpoint",
    "messages_blocks",
    "read_raw_chunk",
    "responses_items",
    "retried_by_litellm",
    "strip_reasoning",
    "watch_raw_stream",
]
