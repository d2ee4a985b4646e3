"""Per-call state that the hooks of one LiteLLM call share, and that no client can name.

LiteLLM keys its own per-call bookkeeping by `litellm_call_id`, which the proxy takes from the
client's `x-litellm-call-id` header: two tenants sending one id, or a client reusing a trace id,
would share (or lose) state keyed by it. Instead each call's state lives in that call's own
logging details dict (`Logging.model_call_details`), which every hook of the call reaches: the
deployment hook and the proxy hooks through `litellm_logging_obj`, `log_pre_api_call` and the
success and failure events as their `kwargs`. The value is a `CallState` instance, which no JSON
body, header or metadata can produce, so a client-set key of the same name is ignored.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..core.dialect import Dialect, Layouts
from ..core.identity import NO_ANCHOR, Anchor
from ..core.policy import TurnPolicy
from ..core.reasoning import Reasoning

if TYPE_CHECKING:
    from ..memo.pending import PendingCaptures

PartT = TypeVar("PartT")

CALL_STATE_KEY = "litellm_reasoning_call"
"""Where a call's `CallState` sits in LiteLLM's per-call logging details."""


@dataclass(slots=True)
class Capture:
    """What a call's capture needs from its request."""

    scope: str
    digest: str
    provider: str | None
    model: str | None
    responses_input: bool = False
    """A native Responses call: its reply is keyed by input items (`responses_input`)."""
    anchor: Anchor = NO_ANCHOR
    """Where the reply stands in its turn (`identity.message_key`)."""
    bridged: bool = False
    """A chat call LiteLLM sends to the Responses API: captured from its Responses events."""
    origin: str | None = None
    """`identity.origin_of` the deployment (what the reply's records are stamped with)."""
    messages_format: bool = False
    """An Anthropic-format `/v1/messages` call: its reply is keyed by `messages_format`."""
    deployment: str | None = None
    """The Router deployment's id."""
    continues_prefill: bool = False
    """The request ends with an assistant message the reply continues: nothing is kept
    (`core.messages.continues_prefill`)."""


@dataclass(frozen=True, slots=True)
class RenderedFor:
    """The target one request was rendered for: what a refusal of it is charged to."""

    provider: str | None
    model: str | None
    dialect: Dialect
    policy: TurnPolicy
    operator_policy: bool = False
    """`policy` is the operator's explicit choice: a refusal never widens it."""


@dataclass(frozen=True, slots=True)
class BodyPatch:
    """What a rendered request's provider body gets back after LiteLLM's translation lost it:
    its dialect's assistant messages patched field by field (`patches_body`: Mistral), or each
    reply's blocks laid out where they stood (`layouts`, from the dialect's `finish`)."""

    dialect: Dialect
    messages: list[Any]
    """The rendered messages the body was built from."""
    layouts: Layouts


@dataclass(eq=False, slots=True)
class CallState:
    """One call's state. Copies are the same object: LiteLLM deep-copies its details dict for
    some integrations, and a copy must not become a second, independent call."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Ours, random: what open captures are filed under (never the client's call id)."""
    owner: Any = None
    """The engine that started this call: only it handles the call's later events (a replaced
    callback instance stays in LiteLLM's event lists, and LiteLLM may deliver a reply late to
    whatever is registered then)."""
    capture: Capture | None = None
    handled: bool = False
    """The request was rendered (or failed open) by the deployment hook."""
    messages_format: bool = False
    """An Anthropic-format `/v1/messages` call (its body is never edited as a chat body)."""
    sent: bool = False
    """The body of an attempt went out (`log_pre_api_call` ran): a next one is a retry."""
    captured: bool = False
    summary: dict[str, Any] | None = None
    """The decisions summary, until LiteLLM's logging metadata exists (`log_pre_api_call`)."""
    reported: dict[str, Any] | None = None
    """The summary as attached to LiteLLM's logging metadata (what the reply adds to)."""
    body_patch: BodyPatch | None = None
    """What LiteLLM's provider body of this request gets back after its translation (None:
    nothing)."""
    stream: Callable[[], Any] | None = None
    """A weak reference to LiteLLM's stream of this call's reply (None: not streamed)."""
    stream_chunks: list[Any] | None = None
    """The chunk list of that stream (LiteLLM appends to it): still there for a capture made
    after the client let go of the stream itself."""
    restored: dict[str, Reasoning] = field(default_factory=dict)
    """Store key -> record, for every record restored into this call's request (and its
    earlier releases' keys): what a provider's refusal evicts (`healing`)."""
    restored_source: tuple[Any, Any, Any, Any] | None = None
    """(keys, earlier releases' keys of indices (a function), records by index, restored
    indices) of a request: `restored` made only when a refusal asks for it
    (`restored_records`), not on every request."""
    rendered_for: RenderedFor | None = None
    """The target the request was rendered for."""
    parts: dict[type[Any], Any] = field(default_factory=dict, repr=False)
    """What an adapter or a conversation format keeps of this call, one value per class of its
    own (`part`, `peek`, `take`): streams read beside LiteLLM's, what a translation loses. The
    call state knows none of them."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def part(self, kind: type[PartT]) -> PartT:
        """This call's `kind`, made (with no arguments) on first use."""
        found = self.parts.get(kind)
        if found is None:
            found = self.parts.setdefault(kind, kind())
        return cast(PartT, found)

    def peek(self, kind: type[PartT]) -> PartT | None:
        """This call's `kind`, if one was made."""
        return cast("PartT | None", self.parts.get(kind))

    def take(self, kind: type[PartT]) -> PartT | None:
        """This call's `kind`, if one was made, no longer kept."""
        return cast("PartT | None", self.parts.pop(kind, None))

    def __copy__(self) -> CallState:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> CallState:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled for a subprocess or a cache: nothing of the call travels.
        return (CallState, ())

    def __repr__(self) -> str:
        return "<litellm-reasoning call state>"

    def restored_records(self) -> dict[str, Reasoning]:
        """Store key -> record of everything restored into this call's request."""
        if self.restored_source is None:
            return self.restored
        keys, legacy_of, stored, indices = self.restored_source
        # The copies earlier releases' replicas restore go too (their keys made only now).
        legacy = legacy_of([i for i in indices if i in stored])
        out: dict[str, Reasoning] = {}
        for i in indices:
            record = stored.get(i)
            if record is None:
                continue
            if i in keys:
                out[keys[i]] = record
            for key in legacy.get(i, ()):
                out[key] = record
        return out

    def forget_restored(self) -> None:
        """Nothing of the store went out after all (or a refusal was healed already)."""
        self.restored, self.restored_source = {}, None

    def owned_by(self, engine: Any) -> bool:
        """Whether `engine` handles this call's events (it started the call, or nobody did)."""
        return self.owner is None or self.owner is engine

    def claim(self, engine: Any) -> Capture | None:
        """The capture `engine` makes now, exactly once (None: not ours, or done)."""
        if not self.owned_by(engine):
            return None
        with self.lock:
            if self.capture is None or self.captured:
                return None
            self.captured = True
            return self.capture


def details_of(request: Any) -> dict[str, Any] | None:
    """The per-call logging details behind a deployment hook's kwargs or a proxy hook's request
    data (`litellm_logging_obj.model_call_details`)."""
    found = _logging_details(request)
    return found[0] if found else None


def _logging_details(request: Any) -> list[dict[str, Any]]:
    """Every logging details dict `request` names: its own `litellm_logging_obj`, then the one
    in its `litellm_params` (Responses stream hooks carry both, and the call's is the latter)."""
    if not isinstance(request, Mapping):
        return []
    params = request.get("litellm_params")
    owners = [request.get("litellm_logging_obj")]
    if isinstance(params, Mapping):
        owners.append(params.get("litellm_logging_obj"))
    found = [getattr(owner, "model_call_details", None) for owner in owners if owner is not None]
    return [details for details in found if isinstance(details, dict)]


def state_of(request: Any) -> CallState | None:
    """The call state behind a hook's request data: LiteLLM's logging details themselves (or a
    copy of them), or the deployment kwargs / proxy data that hold the logging object."""
    state = state_in(request)
    if state is None:
        for details in _logging_details(request):
            state = state_in(details)
            if state is not None:
                break
    return state


def state_in(details: Any) -> CallState | None:
    """The call's state, if the callback made one (a client-set value is never one)."""
    if not isinstance(details, dict):
        return None
    state = details.get(CALL_STATE_KEY)
    return state if isinstance(state, CallState) else None


def new_state(details: dict[str, Any] | None) -> tuple[CallState, CallState | None]:
    """A fresh state for a call (an attempt: a retry re-renders), and the one it replaces."""
    state = CallState()
    previous = state_in(details)
    if details is not None:
        details[CALL_STATE_KEY] = state
    return state, previous


def start_attempt(
    details: dict[str, Any] | None, owner: Any, pending: PendingCaptures
) -> CallState:
    """A new state for this attempt of a call, rendered by `owner` (its engine); the attempt
    it replaces (a retry) is over, its capture closed in `pending`."""
    state, previous = new_state(details)
    state.owner = owner
    if previous is not None:
        pending.close(previous.id)
    return state
