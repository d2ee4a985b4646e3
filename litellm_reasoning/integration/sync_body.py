"""`log_pre_api_call`: the provider body LiteLLM is about to send (the same dict it serialises
after this hook). Sync calls have no pre-call hook that can rewrite messages, so they are
rendered here; async calls rendered by the deployment hook get what LiteLLM's translation lost
put back (Claude's block order, Mistral's and Ollama's fields); every further attempt of a call
LiteLLM retries itself is rendered again, after healing what the failed attempt was refused for.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import litellm

from ..core.dialect import REASONING_KEYS, Dialect, ThinkingOff, strip_reasoning
from ..core.turns import item_without_turn, without_turn
from ..wire import retried_by_litellm
from . import refusals
from .calls import CallState, start_attempt, state_in
from .chat_messages import CHAT
from .fallback import fail_open
from .flows import drive
from .format_flow import Done
from .kwargs import is_sync_details, thinking_default_in_model_map
from .reporting import Reporter

if TYPE_CHECKING:
    from .engine import Engine


def rewrite(
    engine: Engine, model: Any, messages: Any, kwargs: Any, *, active: bool, tasks: set[Any]
) -> None:
    """The provider body of this attempt of a call, as its target needs it."""
    additional = kwargs.get("additional_args") if isinstance(kwargs, dict) else None
    body = additional.get("complete_input_dict") if isinstance(additional, dict) else None
    with fail_open(
        engine.report,
        "rewriting the provider body",
        body if isinstance(body, dict) else {},
        "messages",
    ):
        state = state_in(kwargs)
        if state is not None and not state.owned_by(engine):
            return  # another instance's call: a replaced callback LiteLLM still calls
        if state is not None and state.sent:
            failed = sys.exc_info()[1]
            if retried_by_litellm(list(state.restored_records().values()), body):
                # LiteLLM 1.110+ retries a Gemini refusal itself, every signature swapped for
                # its placeholder on purpose: the restored ones were refused, and that body
                # stays as LiteLLM made it.
                failed = RuntimeError("Corrupted thought signature (retried by LiteLLM)")
                refusals.heal_before_retry(engine, state, failed, tasks)
                return
            refusals.heal_before_retry(engine, state, failed, tasks)
            if state.messages_format:
                return  # an Anthropic-format body is never edited as a chat body
            # Another attempt built from the caller's messages (LiteLLM's retry of the call, a
            # transport retry): rendered again.
            state = None
        if state is not None:
            state.sent = True
            if state.handled:
                _after_translation(engine.report, state, body, kwargs)
                return
        if not active:
            return
        if isinstance(body, dict) and isinstance(body.get("contents"), list):
            _render_gemini(engine, body, model, messages, kwargs)
            return
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            _render_messages(engine, body, messages, kwargs)


def render_before_build(
    engine: Engine, details: Any, messages: Any, optional_params: Any, *, tasks: set[Any]
) -> list[Any] | None:
    """A sync call whose provider body LiteLLM signs before `log_pre_api_call` (Bedrock
    Converse), rendered where LiteLLM is about to build that body: the messages to build it
    from (None: leave them). What the deployment hook does for async calls: the Claude layout
    kept for the body, thinking turned off for a tool loop with no block to send."""
    state = state_in(details)
    if state is not None and not state.owned_by(engine):
        return None  # another instance's call
    if state is not None and state.handled and not state.sent:
        return None  # the deployment hook rendered this attempt
    if state is not None and state.sent:  # LiteLLM's own retry of the call
        refusals.heal_before_retry(engine, state, sys.exc_info()[1], tasks)
        if state.messages_format:
            return None
    if not isinstance(messages, list) or not isinstance(details, dict):
        return None
    state = start_attempt(details, engine, engine.pending)
    sent: dict[str, Any] = {"messages": messages}
    done: Done | None = None
    with fail_open(engine.report, "rendering the request", sent, "messages", state):
        done = render_details(engine, details, messages, state)
    if done is None:  # failed: as the client sent them, less `turn`
        fallback: list[Any] = sent["messages"]
        return fallback
    params = optional_params if isinstance(optional_params, dict) else {}
    return settle(engine, state, done.target.dialect, done.items, [details, params], params)


def render_details(
    engine: Engine, details: dict[str, Any], messages: list[Any], state: CallState
) -> Done:
    """The chat flow on the sync path, whose kwargs are LiteLLM's logging details: rendered,
    and its decisions put on their logging metadata at once (no `log_pre_api_call` follows)."""
    done = drive(engine.store, engine.run(CHAT, engine.facts_of(details), messages, state))
    assert done is not None  # the chat format renders every request
    if is_sync_details(details) and isinstance(details.get("litellm_params"), dict):
        engine.report.attach_decisions(details, state)
    return done


def settle(
    engine: Engine,
    state: CallState,
    dialect: Dialect,
    messages: list[Any],
    read: Sequence[Any],
    params: dict[str, Any],
) -> list[Any]:
    """A rendered request before LiteLLM builds its body (the deployment hook, and sync calls
    rendered where the body is built): what the body must get back after LiteLLM's
    translation, and thinking turned off, for this call only (LiteLLM's `modify_params`: out of
    `params`), when a Claude tool loop has no block to send (`read`: the request's parameter
    dicts). The messages to send."""
    if not dialect.open_loop_without_reasoning(messages):
        return messages
    off = thinking_off(engine, state, dialect, read)
    if off is None:
        return messages
    dialect.turn_thinking_off(params, off)
    state.body_patch = None
    state.forget_restored()
    return [dialect.without_thinking(m) for m in messages]


def thinking_off(
    engine: Engine, state: CallState, dialect: Dialect, params: Sequence[Any]
) -> ThinkingOff | None:
    """For a request whose tool loop has no reasoning to send (`open_loop_without_reasoning`):
    how thinking goes off for this call (`params`: the request's keyword dicts); None when it
    stays, counted and said where the model's thinking cannot go off. LiteLLM's model map is
    read only for such a loop, not on every request."""
    target = state.rendered_for
    provider, model = (target.provider, target.model or "") if target is not None else (None, "")
    off = dialect.thinking_off(params, model, thinking_default_in_model_map(provider, model))
    if off is None:
        return None
    if not off.possible:
        engine.report.thinking_cannot_go_off(dialect.name, model)
        return None
    engine.report.thinking_turned_off(dialect.name)
    return off


def _after_translation(reporter: Reporter, state: CallState, body: Any, kwargs: Any) -> None:
    """A call the deployment hook rendered: its summary on LiteLLM's logging metadata, and what
    LiteLLM's translation lost put back on the body."""
    patch, state.body_patch = state.body_patch, None
    reporter.attach_decisions(kwargs, state)
    if patch is None or not isinstance(body, dict):
        return
    dialect = patch.dialect
    if not dialect.patches_body:
        dialect.lay_out(body, patch.messages, patch.layouts)
        return
    body["messages"] = _patch_assistants(body.get("messages"), patch.messages, dialect)


def _render_messages(engine: Engine, body: dict[str, Any], messages: Any, kwargs: Any) -> None:
    """A sync call with an OpenAI-shaped (or Anthropic) body: rendered, then the body patched
    field by field from the rendered messages."""
    wire = body["messages"] = without_turn(body["messages"])
    if not isinstance(messages, list):
        raise TypeError("no messages to render")
    state = start_attempt(kwargs, engine, engine.pending)
    state.sent = True
    done = render_details(engine, kwargs, messages, state)
    rendered, dialect = done.counts, done.target.dialect
    if dialect.keeps_block_order:
        restored = state.restored, state.restored_source
        state.forget_restored()

        def off_for_loop() -> ThinkingOff | None:
            if not dialect.open_loop_without_reasoning(rendered.messages):
                return None
            return thinking_off(engine, state, dialect, [kwargs, body])

        patch = state.body_patch
        layouts = patch.layouts if patch is not None else {}
        off = dialect.put_blocks(body, rendered.messages, layouts, off_for_loop)
        if off is None:
            state.restored, state.restored_source = restored
        return
    if dialect.patches_wire:
        body["messages"] = _patch_assistants(wire, rendered.messages, dialect)
        return
    if dialect.passthrough or len(wire) != len(rendered.messages):
        # Not an OpenAI-shaped body we can patch field by field: only drop `turn`.
        body["messages"] = without_turn(wire)
        return
    body["messages"] = [
        _patch_wire_message(sent, want) for sent, want in zip(wire, rendered.messages, strict=True)
    ]


def _render_gemini(
    engine: Engine, body: dict[str, Any], model: Any, messages: Any, kwargs: Any
) -> None:
    """Sync calls to Gemini: LiteLLM built `contents` from the client's messages; they are
    rebuilt by LiteLLM's own converter from the rendered messages."""
    if not isinstance(messages, list):
        raise TypeError("no messages to render")
    state = start_attempt(kwargs, engine, engine.pending)
    state.sent = True  # a next `log_pre_api_call` of this call is another attempt
    done = render_details(engine, kwargs, messages, state)
    rendered, dialect = done.counts, done.target.dialect
    if not dialect.body_is_contents or "cachedContent" in body:
        return  # nothing to change (`turn` never reaches a Gemini body)
    contents = _gemini_contents(rendered.messages, str(model or ""), kwargs, dialect, body)
    if len(contents) != len(body["contents"]):
        raise RuntimeError("the Gemini body does not line up with the rendered messages")
    body["contents"] = contents


def _gemini_contents(
    messages: list[Any], model: str, kwargs: Any, dialect: Dialect, body: dict[str, Any]
) -> list[Any]:
    """Gemini `contents` for `messages`, as LiteLLM builds them (system messages go to
    `system_instruction` when the body has one, as in LiteLLM's own request transformation)."""
    from litellm.llms.vertex_ai.gemini.transformation import transform_system_message

    _, rest = transform_system_message(
        supports_system_message="system_instruction" in body, messages=copy.deepcopy(messages)
    )
    params = kwargs.get("litellm_params") if isinstance(kwargs, dict) else None
    config = (
        litellm.GoogleAIStudioGeminiConfig()
        if dialect.platform == "gemini"
        else litellm.VertexGeminiConfig()
    )
    contents: list[Any] = config.transform_messages(
        messages=rest, model=model, litellm_params=dict(params) if isinstance(params, dict) else {}
    )
    return contents


def _patch_assistants(wire: Any, rendered: Sequence[Any], dialect: Dialect) -> list[Any]:
    """The provider body's messages with each assistant message patched by `dialect` from the
    rendered one in the same place among assistant messages (providers may add a system
    message or drop empty ones, so only assistant messages are lined up)."""
    if not isinstance(wire, list):
        raise TypeError("the provider body has no message list")
    wire = without_turn(wire)
    sent = [i for i, m in enumerate(wire) if isinstance(m, dict) and m.get("role") == "assistant"]
    want = [m for m in rendered if isinstance(m, dict) and m.get("role") == "assistant"]
    if len(sent) != len(want):
        raise RuntimeError("the provider body's assistant messages do not line up")
    out = list(wire)
    for index, message in zip(sent, want, strict=True):
        out[index] = dialect.patch_wire(wire[index], message)
    return out


def _patch_wire_message(sent: Any, want: Any) -> Any:
    """`sent` (LiteLLM's translated message) carrying exactly `want`'s reasoning, without `turn`."""
    if not isinstance(sent, dict) or not isinstance(want, dict):
        return sent
    out = strip_reasoning(item_without_turn(sent))
    out.update({key: want[key] for key in REASONING_KEYS if key in want})
    return out
