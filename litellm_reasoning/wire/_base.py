"""Defaults every dialect shares, so each one states only what its provider does differently."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from ..core.dialect import (
    REASONING_KEYS,
    Dialect,
    Finished,
    Layouts,
    ThinkingOff,
    strip_reasoning,
)
from ..core.policy import TurnPolicy
from ..core.reasoning import Reasoning
from ..core.render import Rendered


class BaseDialect:
    """A dialect that patches nothing after LiteLLM and has no validity rule of its own."""

    name: ClassVar[str] = ""
    platform: ClassVar[str] = ""
    passthrough: ClassVar[bool] = False
    accepts_reasoning: ClassVar[bool] = True
    prefers_opaque: ClassVar[bool] = False
    patches_body: ClassVar[bool] = False
    patches_wire: ClassVar[bool] = False
    keeps_block_order: ClassVar[bool] = False
    requires_reasoning: ClassVar[bool] = False
    has_tool_loop_rule: ClassVar[bool] = False
    streams_details_apart: ClassVar[bool] = False
    input_items: ClassVar[bool] = False
    body_is_contents: ClassVar[bool] = False

    def accepts(self, reasoning: Reasoning) -> bool:
        return True

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        raise NotImplementedError

    def plain_fields(self, reasoning: Reasoning | None) -> dict[str, Any] | None:
        return None

    def validity_start(self, messages: Sequence[Any]) -> int | None:
        return None

    def patch_wire(self, sent: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
        return sent

    def finish(
        self, sent: Sequence[Any], rendered: Rendered, stored: Mapping[int, Reasoning], model: str
    ) -> Finished:
        return Finished()

    def for_records(
        self, stored: Mapping[int, Reasoning], provider: str | None, model: str, origin: str
    ) -> str | None:
        return None

    def prepare_request(self, params: dict[str, Any], model: str, policy: TurnPolicy) -> None:
        return None

    def open_loop_without_reasoning(self, messages: Sequence[Any]) -> bool:
        return False

    def thinking_off(
        self, params: Sequence[Any], model: str, from_model_map: str | None
    ) -> ThinkingOff | None:
        return None

    def turn_thinking_off(self, params: dict[str, Any], off: ThinkingOff) -> None:
        return None

    def without_thinking(self, message: Any) -> Any:
        return message

    def put_blocks(
        self,
        body: dict[str, Any],
        rendered: Sequence[Any],
        layouts: Layouts,
        thinking_off: Callable[[], ThinkingOff | None],
    ) -> ThinkingOff | None:
        raise NotImplementedError(f"{self.name} puts no blocks on a provider body")

    def lay_out(
        self,
        body: dict[str, Any],
        rendered: Sequence[Any],
        layouts: Layouts,
        *,
        converse: bool = False,
    ) -> None:
        return None


PartT = TypeVar("PartT")


class CallParts(Protocol):
    """A call's state as an adapter sees it: values of the adapter's own classes, one per class,
    that it alone creates and reads (the LiteLLM layer's `CallState` knows none of them)."""

    def part(self, kind: type[PartT]) -> PartT: ...

    def peek(self, kind: type[PartT]) -> PartT | None: ...


@dataclass(frozen=True, slots=True)
class ReplyRead:
    """What an adapter read from a reply beside its messages."""

    layout: tuple[str, ...] = ()
    """Where the reply's reasoning blocks stood among its content (empty: unknown, or none)."""
    transformations: tuple[dict[str, Any], ...] = ()
    """Blocks of the request the provider reports it dropped or let through silently."""


class BaseAdapter:
    """What a provider family does around LiteLLM beside rendering messages: reading a reply
    (its raw body, its stream's raw chunks, what LiteLLM's assembly lost), the provider-body
    block LiteLLM's converter cannot make, a retry LiteLLM makes itself. The LiteLLM layer
    reaches an adapter only through the registry (`wire.adapter_for` by provider, or the hooks
    every adapter is asked), never by importing it; an adapter never imports LiteLLM. Each hook
    does nothing unless the adapter defines it."""

    providers: ClassVar[frozenset[str]] = frozenset()
    """LiteLLM providers whose replies this adapter reads (`read_reply`)."""
    endpoint_issuers: ClassVar[frozenset[str]] = frozenset()
    """LiteLLM providers whose reasoning blobs the serving endpoint itself makes: a record
    goes back only to the same `api_base`, whatever the credentials."""
    reads_stream: ClassVar[bool] = False
    """Whether `read_reply` needs a streamed reply's chunks."""

    def read_reply(
        self, response: Any, raw_details: Any, chunks: Sequence[Any] | None
    ) -> ReplyRead:
        """What `response` says beside its messages (`raw_details`: LiteLLM's logging details
        holding the raw body, or the stream's chunks; `chunks`: a streamed reply's chunks)."""
        return ReplyRead()

    def retried_by_litellm(self, restored: Sequence[Reasoning], body: Any) -> bool:
        """Whether `body`, sent again for a call into which the `restored` records went, is
        LiteLLM's own retry of a refusal of them (asked of every adapter)."""
        return False

    def watch_raw_stream(self, parts: CallParts) -> None:
        """A stream whose raw chunks LiteLLM's parser sees (an OpenAI-shaped one) is starting:
        what this adapter keeps of its chunks goes in the call's `parts`."""
        return None

    def read_raw_chunk(self, parts: CallParts, chunk: dict[str, Any]) -> None:
        """One raw chunk of a watched stream, before LiteLLM's parser (a failure is contained
        by the caller: watching never breaks the stream)."""
        return None

    def converse_block(self, block: Any) -> dict[str, Any] | None:
        """The Bedrock Converse content block LiteLLM's converter should make of a chat
        message's thinking `block` where it would lose it (None: LiteLLM's own)."""
        return None

    def complete_message(
        self, message: dict[str, Any], choice: Any, number: int, parts: CallParts
    ) -> None:
        """Put back on a reply's assembled `message` (of `choice`, the `number`th) what
        LiteLLM's assembly lost and this adapter kept in the call's `parts`, in place (asked
        of every adapter, whatever the reply's provider)."""
        return None


__all__ = [
    "REASONING_KEYS",
    "BaseAdapter",
    "BaseDialect",
    "CallParts",
    "Dialect",
    "Finished",
    "Layouts",
    "ReplyRead",
    "ThinkingOff",
    "strip_reasoning",
]
