"""What the core asks of a dialect (how one family of targets wants reasoning on the messages it
is sent), and the removal of every reasoning field.

The dialects themselves live in `litellm_reasoning.wire`, one module per provider family; the
core only ever sees them through this protocol."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .extract import BLOCK_TYPES, CARRIER_KEYS, carries_nothing
from .policy import TurnPolicy
from .reasoning import Reasoning

if TYPE_CHECKING:
    from .render import Rendered

REASONING_KEYS = CARRIER_KEYS
"""Message keys that hold reasoning in some provider's or LiteLLM's format."""


@dataclass(slots=True)
class Finished:
    """What a dialect's `finish` did to a rendered request, for the call's state and reports."""

    layouts: dict[int, tuple[tuple[str, ...], list[dict[str, Any]]]] = field(default_factory=dict)
    """Rendered message index -> (layout, its blocks in order): messages whose blocks go back
    where they stood in the reply (the provider body is laid out after LiteLLM)."""
    signed_from_ids: list[int] = field(default_factory=list)
    """Messages whose first function call got the signature the client kept in its id."""
    dummy_signed: list[int] = field(default_factory=list)
    """Messages whose first function call got the provider's documented dummy signature."""
    messages: list[Any] | None = None
    """The rendered messages as the dialect finished them (None: unchanged)."""
    reordered: list[int] = field(default_factory=list)
    """Kept messages whose blocks go in the issued order, not the client's (`Rendered`)."""

    def applied_to(self, rendered: Rendered) -> Rendered:
        """`rendered` as finished (a new value; `rendered` itself unchanged)."""
        if self.messages is None and not self.reordered:
            return rendered
        finished: Rendered = dataclasses.replace(
            rendered,
            messages=rendered.messages if self.messages is None else self.messages,
            reordered=self.reordered,
        )
        return finished


@dataclass(frozen=True, slots=True)
class ThinkingOff:
    """Thinking turned off for one call: a tool loop the target refuses with thinking on and no
    reasoning to send (`Dialect.thinking_off`)."""

    default: str
    """The model's thinking default, which says how thinking goes off."""
    possible: bool = True
    """False: the model thinks whatever the request says; the request goes as it is."""


Layouts = Mapping[int, tuple[tuple[str, ...], list[dict[str, Any]]]]
"""Rendered message index -> (layout, its blocks in their original order) (`Finished.layouts`)."""


class Dialect(Protocol):
    """How one family of targets wants an assistant message's reasoning: everything the core
    and the LiteLLM layer ask of a provider, with no `getattr` or `isinstance` on the way."""

    name: ClassVar[str]
    platform: ClassVar[str]
    """The platform a signature must come from (`anthropic`, `bedrock`, `gemini`, ...)."""
    passthrough: ClassVar[bool]
    """True when the dialect leaves assistant messages exactly as the client sent them."""
    accepts_reasoning: ClassVar[bool]
    """False when the target takes no reasoning at all (every policy then sends none)."""
    prefers_opaque: ClassVar[bool]
    """True when a stored signed/encrypted record beats plain text the client kept."""
    patches_body: ClassVar[bool]
    """True when LiteLLM's translation loses what `render` put on a message, so the provider
    body is patched with `patch_wire` after it (every call path)."""
    patches_wire: ClassVar[bool]
    """True when the sync path patches the body's assistant messages with `patch_wire`."""
    keeps_block_order: ClassVar[bool]
    """True when a reply's reasoning blocks must go back where they stood among its content."""
    requires_reasoning: ClassVar[bool]
    """True when the target refuses an assistant message it wants reasoning on without it."""
    has_tool_loop_rule: ClassVar[bool]
    """True when `validity_start` can require reasoning (an open tool loop's)."""
    input_items: ClassVar[bool]
    """True when the target takes OpenAI Responses input items: a native Responses call is
    rendered item by item, and a chat call's reply comes back through LiteLLM's Responses
    bridge (captured as items)."""
    streams_details_apart: ClassVar[bool]
    """True when LiteLLM drops a streamed reply's `reasoning_details` from the chunks of an
    OpenAI-compatible stream: they are merged from the raw deltas for the capture."""
    body_is_contents: ClassVar[bool]
    """True when the provider body is Gemini's `contents`: on the sync path it is rebuilt from
    the rendered messages by LiteLLM's own converter."""

    def accepts(self, reasoning: Reasoning) -> bool:
        """Whether this target can take `reasoning` back (signed by another issuer: no)."""
        ...

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        """`message` for the wire: its reasoning replaced by `reasoning` (None: carries none)."""
        ...

    def plain_fields(self, reasoning: Reasoning | None) -> dict[str, Any] | None:
        """What `render` appends to a message that carries no reasoning (`carries_nothing`):
        new fields with immutable values (a new dict each call), so the hot path of a client
        that drops reasoning merges them in without asking `render`. None: `render` does more
        than append fields for this dialect."""
        ...

    def validity_start(self, messages: Sequence[Any]) -> int | None:
        """The provider's own validity rule: the index of an earlier assistant message that
        must keep its reasoning whatever the turn rule says (Claude's open tool loop); None
        when the rule adds nothing. It only ever adds to the current turn."""
        ...

    def patch_wire(self, sent: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
        """`sent` (LiteLLM's translated assistant message) carrying `want`'s reasoning."""
        ...

    def finish(
        self,
        sent: Sequence[Any],
        rendered: Rendered,
        stored: Mapping[int, Reasoning],
        model: str,
    ) -> Finished:
        """The provider's own finishing touches on a rendered request (`sent`: the messages as
        the client sent them; `stored`: the records restored by index), in place."""
        ...

    def for_records(
        self, stored: Mapping[int, Reasoning], provider: str | None, model: str, origin: str
    ) -> str | None:
        """Another dialect this request to `provider`/`model` takes, given the records it
        restores (`origin`: the deployment's `identity.origin_of`); None: this one."""
        ...

    def prepare_request(self, params: dict[str, Any], model: str, policy: TurnPolicy) -> None:
        """What a chat request to this target must ask for beside its messages for the reply
        to carry reasoning it can take back, in place in the call's `params` (the Responses
        API's `include` of encrypted reasoning); nothing for most."""
        ...

    def open_loop_without_reasoning(self, messages: Sequence[Any]) -> bool:
        """Whether the rendered chat `messages` answer a tool loop whose assistant message has
        no reasoning to send, which this target refuses with thinking on (Claude); then
        `thinking_off` is asked."""
        ...

    def thinking_off(
        self, params: Sequence[Any], model: str, from_model_map: str | None
    ) -> ThinkingOff | None:
        """For such a loop: how thinking goes off for this call, when `params` (the request's
        keyword dicts) leave it on (`from_model_map`: the model's thinking default by LiteLLM's
        model map, None: it does not say); None: thinking is off already."""
        ...

    def turn_thinking_off(self, params: dict[str, Any], off: ThinkingOff) -> None:
        """Thinking off in `params` (a request's keyword dict or a provider body), in place."""
        ...

    def without_thinking(self, message: Any) -> Any:
        """A rendered chat message without what a call with thinking off must not send."""
        ...

    def put_blocks(
        self,
        body: dict[str, Any],
        rendered: Sequence[Any],
        layouts: Layouts,
        thinking_off: Callable[[], ThinkingOff | None],
    ) -> ThinkingOff | None:
        """The sync path of a target that `keeps_block_order`: its rendered blocks on the
        provider body LiteLLM built from the client's messages, in place (raises when the body
        does not line up, before anything changes); thinking off instead when
        `thinking_off()` (asked once the body lines up) says so, which is returned."""
        ...

    def lay_out(
        self,
        body: dict[str, Any],
        rendered: Sequence[Any],
        layouts: Layouts,
        *,
        converse: bool = False,
    ) -> None:
        """The provider body LiteLLM built from `rendered` (Bedrock Converse's when `converse`)
        with each reply's blocks where they stood (`layouts`, made by `finish`), in place."""
        ...


def strip_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of `message` without any reasoning field, inline thinking block or tool-call extra."""
    if carries_nothing(message):
        return dict(message)  # in C: nothing to take out
    out = {key: value for key, value in message.items() if key not in REASONING_KEYS}
    calls = out.get("tool_calls")
    if isinstance(calls, list) and any(
        isinstance(call, dict) and "provider_specific_fields" in call for call in calls
    ):
        out["tool_calls"] = [
            {k: v for k, v in call.items() if k != "provider_specific_fields"}
            if isinstance(call, dict)
            else call
            for call in calls
        ]
    content = out.get("content")
    if isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in BLOCK_TYPES for part in content
    ):
        kept = [
            part
            for part in content
            if not (isinstance(part, dict) and part.get("type") in BLOCK_TYPES)
        ]
        out["content"] = kept or (None if out.get("tool_calls") else "")
    return out
