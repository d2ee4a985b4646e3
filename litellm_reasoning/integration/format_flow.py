"""What one conversation format (chat messages, Anthropic-format block messages, Responses input
items) hands the one request pipeline (`Engine.run`), and what it gets back.

The pipeline is the same for every format: the format's `plan` (its target, which items are
looked up and under which keys) -> the one store read (`Engine.read`: the budget's unread
decision, the wait for open captures, the refused left out) -> the format's `render` (the
records put back in place, the provider's strip rule and the budget) -> what every rendered
request leaves (`Engine.record`: its capture opened, its counts, its decisions summary).

Around it, each LiteLLM entry point (`Entry`: chat completions, Responses, `/v1/messages`) makes
the decisions only it can: whether a call is rendered here at all, and what the call's keyword
arguments need after the pipeline. `pipeline.dispatch` does the rest once for all of them. A new
entry point is an `Entry`, a format, and one line in `pipeline.ENTRIES`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..core.reasoning import Reasoning
from ..core.render import Rendered
from ..core.targets import Target
from .calls import BodyPatch, CallState, Capture
from .flows import Flow

if TYPE_CHECKING:
    from .engine import Engine
    from .kwargs import CallFacts

DetailT = TypeVar("DetailT")


@dataclass(slots=True)
class Plan(Generic[DetailT]):
    """One request's store read (`Engine.read`'s parameters) and the format's own plan."""

    scope: str
    keys: dict[int, str]
    """Item index -> store key, for the items whose reasoning is looked up (re-keyed in place
    where two conversations share a key)."""
    before: Mapping[int, str]
    """Item index -> digest of the conversation before it (what its capture is filed under)."""
    turn_start: int
    own_tokens: Callable[[], Mapping[int, int]]
    """The tokens of the reasoning the client's items carry and the policy keeps."""
    budget_may_drop: bool
    """The budget may leave earlier turns' records unread here."""
    detail: DetailT
    """The format's own plan (`render` reads it)."""
    legacy: Callable[[Sequence[int]], Mapping[int, tuple[str, ...]]] | None = None
    required: bool = False
    """The target refuses the request without the records looked up."""
    places: Callable[[int], str | None] | None = None
    budgeted: Collection[int] | None = None


@dataclass(slots=True)
class Done:
    """A format's rendered request."""

    items: list[Any]
    target: Target
    """What it was rendered for (the records may have switched the dialect)."""
    counts: Rendered
    """What happened to each item's reasoning (the indices; `Reporter.rendered` counts them)."""
    over_budget: int
    summary: Callable[[], dict[str, Any]]
    """Its decisions summary, made after everything else (a failure there costs only the
    summary)."""
    restored: dict[str, Reasoning] | tuple[Any, Any, Any, Any]
    """What went in from the store (`Engine.conclude`)."""
    capture: Capture
    body_patch: BodyPatch | None = None
    """What LiteLLM's translation of the chat body must get back (`calls.BodyPatch`), kept on
    the call's state by `Engine.record`."""


PlanT = TypeVar("PlanT")


class ConversationFormat(Protocol[PlanT]):
    """One input format's part of the pipeline."""

    def plan(self, engine: Engine, facts: CallFacts, items: list[Any]) -> Plan[PlanT] | None:
        """What to look up (None: the request is not rendered)."""
        ...

    def render(
        self,
        engine: Engine,
        plan: Plan[PlanT],
        found: Mapping[str, Reasoning],
        unread: Mapping[int, int],
    ) -> Flow[Done]:
        """The items with the records `found` (by key, the refused ones left out), the limits
        applied; `unread`: index -> estimated tokens of the records the budget left unread."""
        ...


@dataclass(slots=True)
class Begun:
    """What an entry point decided for one call it renders."""

    format: ConversationFormat[Any]
    items: list[Any]
    """What the format runs on."""


class Entry(Protocol):
    """One LiteLLM entry point's decisions around the pipeline (`pipeline.dispatch`)."""

    call_types: frozenset[str]
    """LiteLLM call types that enter here."""
    field: str
    """The keyword argument holding the request's items."""
    doing: str
    """What a failure of its rendering is logged as."""
    starts_early: bool
    """The call's state starts before the decision (a later hook of the call must find it even
    when rendering fails); False: only for a request rendered here."""
    blocks_body: bool
    """The provider body is LiteLLM's Anthropic-format body, never edited as a chat body later
    (`CallState.messages_format`)."""

    def begin(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        facts: CallFacts,
        items: list[Any],
        previous: CallState | None,
        state: CallState | None,
    ) -> Begun | None:
        """Whether this call is rendered here, and how (None: only `turn` is taken out);
        `previous`: the state an earlier hook of the same call left (LiteLLM's bridges)."""
        ...

    def after_pipeline(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        begun: Begun,
        done: Done | None,
        state: CallState,
    ) -> None:
        """What the call's keyword arguments need after the pipeline ran `begun` (`done`: its
        result; None: the format did not render the request)."""
        ...


def stored_records(
    keys: Mapping[int, str],
    legacy: Mapping[int, tuple[str, ...]],
    found: Mapping[str, Reasoning],
) -> dict[int, Reasoning]:
    """Message index -> its record: under its own key, else one an earlier release wrote under
    its key there, newest release first (never a copy marked superseded: written there for
    older replicas by a release that also wrote the record under its own key)."""
    try:  # each message's record found (the common case): one pass, in C
        stored = dict(zip(keys, map(found.__getitem__, keys.values()), strict=True))
    except KeyError:
        stored = {i: found[key] for i, key in keys.items() if key in found}
    for i, older_keys in legacy.items():
        if i in stored:
            continue
        for key in older_keys:
            record = found.get(key)
            if record is not None and not record.superseded:
                stored[i] = record
                break
    return stored
