"""`ReasoningCallback`: the LiteLLM custom callback, and the only module that touches LiteLLM.

Where it acts (measured on LiteLLM 1.106.12 and 1.110.2):

* async SDK, Router and proxy: `async_pre_call_deployment_hook` rewrites `messages` after
  routing, on every attempt, so retries and fallbacks are rendered for the deployment they hit;
* sync `completion` / `Router.completion` have no pre-call hook that can rewrite messages, so
  `log_pre_api_call` rewrites the provider body LiteLLM is about to send (the same dict it then
  serialises). This also covers async calls whose `messages` were passed positionally;
* capture: non-streaming async replies in `async_post_call_success_deployment_hook`, before the
  caller gets them; streams and sync replies from the assembled reply in the success events. Those
  run after the caller has the reply, so the next request of the same conversation waits briefly
  for an open capture (see `_pending`).

Fail-open: every hook catches everything, logs one warning per kind of failure and per minute,
and lets the request through with only `turn` removed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import litellm
from litellm import get_llm_provider
from litellm.integrations.custom_logger import CustomLogger

from . import identity
from ._pending import PendingCaptures, await_any, wait_any
from .dialects import REASONING_KEYS, get_dialect, strip_reasoning
from .dialects.anthropic import (
    AnthropicDialect,
    bedrock_redacted_content,
    thinking_requested,
    tool_loop_needs_thinking,
)
from .extract import reasoning_from_message
from .policy import TurnPolicy
from .render import Rendered, own_reasonings, plan, render
from .stores import MemoryStore, ReasoningStore, store_from_url
from .targets import Target, parse_overrides, resolve_target
from .turns import TURN_KEY
from .types import Reasoning

logger = logging.getLogger("litellm_reasoning")

_COMPLETION_CALL_TYPES = frozenset({"completion", "acompletion"})
_REDACTED = "redacted-by-litellm"


@dataclass(slots=True)
class _Request:
    """One request being rendered: its target, scope and the store keys it looks up."""

    kwargs: Mapping[str, Any]
    messages: list[Any]
    target: Target
    provider: str | None
    model: str | None
    scope: str
    keys: dict[int, str]
    """Message index -> store key, for the messages whose reasoning is looked up."""
    before: dict[int, str]
    """Message index -> digest of the conversation before it (what its capture is filed under)."""
    digest: str
    """Digest of the whole history: the state this call's reply answers."""
    owns: list[Reasoning | None]
    """The reasoning each message carries itself (read once)."""


@dataclass(slots=True)
class _Call:
    """What a call's capture needs from its request."""

    scope: str
    digest: str
    provider: str | None
    model: str | None


def _call_type_name(call_type: Any) -> str:
    return str(getattr(call_type, "value", call_type) or "")


def _as_dict(obj: Any) -> dict[str, Any] | None:
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        result = dump()
        return result if isinstance(result, dict) else None
    return None


def _without_turn(messages: Sequence[Any]) -> list[Any]:
    return [
        {k: v for k, v in m.items() if k != TURN_KEY}
        if isinstance(m, dict) and TURN_KEY in m
        else m
        for m in messages
    ]


class ReasoningCallback(CustomLogger):
    """Keeps every LiteLLM-routed model's reasoning right across requests.

    Args:
        store: a `ReasoningStore`, or a URL (`memory://`, `sqlite:///path`,
            `redis://host:port/db`). Default: an in-memory store.
        namespace: tenant scope for SDK use; a call can set its own with
            `metadata={"reasoning_namespace": ...}`. The proxy adds key, team and end user.
        dialects: `{model pattern: dialect name}` overrides (fnmatch on the model, the
            `provider/model` name or the Router model group).
        policies: `{model pattern: turn policy}` overrides (`current_turn`, `all_turns`,
            `tool_calls_all_turns`, `none`).
        capture_wait_seconds: how long a request waits for the capture of the reply it continues
            when that capture is still running (streams, sync calls).
    """

    def __init__(
        self,
        store: ReasoningStore | str | None = None,
        *,
        namespace: str = "default",
        dialects: Mapping[str, str] | None = None,
        policies: Mapping[str, str] | None = None,
        capture_wait_seconds: float = 2.0,
        max_tracked_calls: int = 10_000,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.instance_id = uuid.uuid4().hex
        """Public on purpose: LiteLLM keeps one instance per class and public fields, so a second
        callback (another store, another test) would otherwise never receive events."""
        if isinstance(store, str):
            store = store_from_url(store)
        self.store: ReasoningStore = store if store is not None else MemoryStore()
        self.namespace = namespace
        self.overrides = [
            *parse_overrides(dialects, kind="dialect"),
            *parse_overrides(policies, kind="policy"),
        ]
        self.capture_wait_seconds = capture_wait_seconds
        self.stats: Counter[str] = Counter()
        """What the callback did: restored, stripped, captured, missing, waited, errors."""
        self._max_tracked_calls = max_tracked_calls
        self._calls: OrderedDict[str, _Call] = OrderedDict()
        self._rendered: OrderedDict[str, None] = OrderedDict()
        self._captured: OrderedDict[str, None] = OrderedDict()
        self._pending = PendingCaptures()
        self._lock = threading.Lock()
        self._warned: dict[str, float] = {}
        try:
            _send_bedrock_redacted_thinking()
        except Exception as exc:
            self._fail("teaching LiteLLM's Bedrock converter redacted thinking", exc)

    @property
    def active(self) -> bool:
        """Registered in `litellm.callbacks`. LiteLLM keeps replaced instances in its internal
        event lists; a replaced instance must not touch requests any more."""
        return any(cb is self for cb in litellm.callbacks)

    # ------------------------------------------------------------------ failure reporting

    def _fail(self, where: str, exc: BaseException) -> None:
        self.stats["errors"] += 1
        now = time.monotonic()
        if now - self._warned.get(where, -1e9) >= 60.0:
            self._warned[where] = now
            logger.warning(
                "litellm-reasoning: %s failed (%s: %s); the request goes through unchanged "
                "except for `turn`",
                where,
                type(exc).__name__,
                exc,
            )
        else:
            logger.debug("litellm-reasoning: %s failed again", where, exc_info=exc)

    # ------------------------------------------------------------------ request side

    def _scope(self, kwargs: Mapping[str, Any]) -> str:
        metadata: dict[str, Any] = {}
        params = kwargs.get("litellm_params")
        for source in (
            params.get("metadata") if isinstance(params, dict) else None,
            kwargs.get("litellm_metadata"),
            kwargs.get("metadata"),
        ):
            if isinstance(source, dict):
                metadata.update(source)
        parts = {
            "ns": metadata.get("reasoning_namespace") or self.namespace,
            "key": metadata.get("user_api_key_hash"),
            "team": metadata.get("user_api_key_team_id"),
            "user": metadata.get("user_api_key_end_user_id") or kwargs.get("user"),
        }
        return "|".join(f"{name}={value}" for name, value in parts.items() if value)

    def _target(
        self, kwargs: Mapping[str, Any], messages: Sequence[Any]
    ) -> tuple[Target, str | None, str]:
        params = kwargs.get("litellm_params")
        params = params if isinstance(params, dict) else {}
        model = str(kwargs.get("model") or "")
        api_base = kwargs.get("api_base") or params.get("api_base")
        provider = kwargs.get("custom_llm_provider") or params.get("custom_llm_provider")
        bare_model = model
        if provider and model.startswith(f"{provider}/"):
            bare_model = model[len(provider) + 1 :]
        elif not provider:
            # No provider LiteLLM knows: rendered as passthrough.
            with contextlib.suppress(Exception):
                bare_model, provider, _, _ = get_llm_provider(model=model, api_base=api_base)
        names = [f"{provider}/{bare_model}", model]
        metadata = kwargs.get("metadata")
        if isinstance(metadata, dict) and metadata.get("model_group"):
            names.append(str(metadata["model_group"]))
        optional = kwargs.get("optional_params")
        request = [kwargs, optional if isinstance(optional, dict) else {}]
        request += [r["extra_body"] for r in list(request) if isinstance(r.get("extra_body"), dict)]
        thinking = [r["thinking"] for r in request if isinstance(r.get("thinking"), dict)]
        target = resolve_target(
            provider,
            bare_model,
            api_base,
            has_tools=any(r.get("tools") for r in request),
            preserved_thinking=any(t.get("clear_thinking") is False for t in thinking),
            names=names,
            overrides=self.overrides,
        )
        return target, provider, bare_model

    def _begin(self, request: _Request) -> None:
        """Remember what this call's capture needs, and open it for later requests to wait on."""
        call_id = request.kwargs.get("litellm_call_id")
        if not isinstance(call_id, str):
            return
        scope, digest = request.scope, request.digest
        provider, model = request.provider, request.model
        with self._lock:
            self._calls[call_id] = _Call(scope, digest, provider, model)
            while len(self._calls) > self._max_tracked_calls:
                self._calls.popitem(last=False)
        self._mark_handled(call_id)
        self._pending.open(call_id, scope, digest)

    def _mark_handled(self, call_id: Any) -> None:
        """The request of `call_id` was rendered (or failed open): the body patch leaves it."""
        if not isinstance(call_id, str):
            return
        with self._lock:
            self._rendered[call_id] = None
            while len(self._rendered) > self._max_tracked_calls:
                self._rendered.popitem(last=False)

    def _finish(self, rendered: Rendered, target: Target) -> None:
        self.stats["restored"] += len(rendered.restored)
        self.stats["stripped"] += len(rendered.stripped)
        self.stats["missing"] += len(rendered.missing)
        self.stats["dropped"] += len(rendered.dropped)
        if rendered.restored or rendered.stripped or rendered.missing or rendered.dropped:
            logger.debug(
                "litellm-reasoning: dialect=%s policy=%s kept=%s restored=%s stripped=%s "
                "missing=%s dropped=%s",
                target.dialect,
                target.policy.value,
                rendered.kept,
                rendered.restored,
                rendered.stripped,
                rendered.missing,
                rendered.dropped,
            )
        if rendered.dropped:
            logger.debug(
                "litellm-reasoning: %s cannot take the reasoning of messages %s (signed by "
                "another issuer, or unsigned): left out",
                target.dialect,
                rendered.dropped,
            )

    def _prepare(self, kwargs: Mapping[str, Any], messages: list[Any]) -> _Request:
        target, provider, model = self._target(kwargs, messages)
        scope = self._scope(kwargs)
        dialect = get_dialect(target.dialect)
        owns = own_reasonings(messages)
        wanted = plan(messages, dialect, target.policy, owns)
        # One pass over the history: the digests name this call's reply and the lookups.
        digests, shapes = identity.walk(messages)
        empty = identity.conversation_digest([])
        keys = {i: identity.message_key(scope, messages[i], digests[i], shapes[i]) for i in wanted}
        before = {i: digests[i - 1] if i > 0 else empty for i in wanted}
        digest = digests[-1] if digests else empty
        return _Request(
            kwargs, messages, target, provider, model, scope, keys, before, digest, owns
        )

    def _open_captures(
        self, request: _Request, found: Mapping[str, Reasoning]
    ) -> list[threading.Event]:
        """Captures still running for replies this request continues and has no record of."""
        return [
            event
            for i, key in request.keys.items()
            if key not in found
            for event in self._pending.pending(request.scope, request.before[i])
            if not event.is_set()
        ]

    def _complete(self, request: _Request, found: Mapping[str, Reasoning]) -> Rendered:
        stored = {i: found[key] for i, key in request.keys.items() if key in found}
        dialect = get_dialect(request.target.dialect)
        rendered = render(request.messages, dialect, request.target.policy, stored, request.owns)
        self._begin(request)
        self._finish(rendered, request.target)
        return rendered

    async def _arender(
        self, kwargs: Mapping[str, Any], messages: list[Any]
    ) -> tuple[Rendered, Target]:
        request = self._prepare(kwargs, messages)
        found: dict[str, Reasoning] = {}
        if request.keys:
            found = await self.store.aget_many(request.scope, list(request.keys.values()))
            deadline = time.monotonic() + self.capture_wait_seconds
            while events := self._open_captures(request, found):
                self.stats["waited"] += 1
                if not await await_any(events, deadline):
                    break
                missing = [k for k in request.keys.values() if k not in found]
                found.update(await self.store.aget_many(request.scope, missing))
        return self._complete(request, found), request.target

    def _render_sync(
        self, kwargs: Mapping[str, Any], messages: list[Any]
    ) -> tuple[Rendered, Target]:
        request = self._prepare(kwargs, messages)
        found: dict[str, Reasoning] = {}
        if request.keys:
            found = self.store.get_many(request.scope, list(request.keys.values()))
            deadline = time.monotonic() + self.capture_wait_seconds
            while events := self._open_captures(request, found):
                self.stats["waited"] += 1
                if not wait_any(events, deadline):
                    break
                missing = [k for k in request.keys.values() if k not in found]
                found.update(self.store.get_many(request.scope, missing))
        return self._complete(request, found), request.target

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        messages = kwargs.get("messages")
        if _call_type_name(call_type) not in _COMPLETION_CALL_TYPES or not isinstance(
            messages, list
        ):
            return None
        if not self.active:
            return None
        try:
            rendered, target = await self._arender(kwargs, messages)
            kwargs["messages"] = rendered.messages
            if self._claude_without_thinking(target, [kwargs], rendered.messages):
                # LiteLLM's `modify_params` behaviour, for this call only.
                kwargs["messages"] = [_without_thinking_blocks(m) for m in rendered.messages]
                for name in ("thinking", "reasoning_effort"):
                    kwargs.pop(name, None)
        except Exception as exc:
            self._fail("rendering the request", exc)
            self._mark_handled(kwargs.get("litellm_call_id"))
            kwargs["messages"] = _without_turn(messages)
        return kwargs

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
        """Sync calls (and positional-`messages` async calls): rewrite the provider body."""
        try:
            call_id = kwargs.get("litellm_call_id")
            with self._lock:
                if call_id in self._rendered:
                    return
            if not self.active:
                return
            body = (kwargs.get("additional_args") or {}).get("complete_input_dict")
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                return
            wire = body["messages"]
            try:
                if not isinstance(messages, list):
                    raise TypeError("no messages to render")
                rendered, target = self._render_sync(kwargs, messages)
            except Exception as exc:
                self._fail("rendering the request", exc)
                body["messages"] = _without_turn(wire)
                return
            if isinstance(get_dialect(target.dialect), AnthropicDialect):
                self._patch_anthropic_body(body, rendered, target, kwargs)
                return
            if get_dialect(target.dialect).passthrough or len(wire) != len(rendered.messages):
                # Not an OpenAI-shaped body we can patch field by field: only drop `turn`.
                body["messages"] = _without_turn(wire)
                return
            body["messages"] = [
                _patch_wire_message(sent, want)
                for sent, want in zip(wire, rendered.messages, strict=True)
            ]
        except Exception as exc:
            self._fail("rewriting the provider body", exc)
            with contextlib.suppress(Exception):
                body = kwargs["additional_args"]["complete_input_dict"]
                body["messages"] = _without_turn(body["messages"])

    def _claude_without_thinking(
        self, target: Target, params: Sequence[Any], messages: Sequence[Any]
    ) -> bool:
        """Thinking is on for a Claude target, but the tool calls this request answers came
        with no thinking block we can send (a fallback from another provider, a store miss).

        Claude would answer 400 ("Expected `thinking` or `redacted_thinking`, but found
        `tool_use`"), so thinking is turned off for this call only, as LiteLLM's
        `modify_params` does, and it is logged and counted (`stats["thinking_disabled"]`).
        """
        if not isinstance(get_dialect(target.dialect), AnthropicDialect):
            return False
        extra = [p.get("optional_params") for p in params if isinstance(p, dict)]
        extra += [p.get("extra_body") for p in [*params, *extra] if isinstance(p, dict)]
        if not thinking_requested([*params, *extra]) or not tool_loop_needs_thinking(messages):
            return False
        self.stats["thinking_disabled"] += 1
        logger.warning(
            "litellm-reasoning: thinking turned off for this %s call: the tool calls it answers "
            "have no thinking block this target accepts (another provider's reply, or no "
            "stored record), and Claude rejects a tool loop with thinking on without one",
            target.dialect,
        )
        return True

    def _patch_anthropic_body(
        self, body: dict[str, Any], rendered: Rendered, target: Target, kwargs: Any
    ) -> None:
        """Sync calls to Claude: put each assistant message's rendered thinking blocks first in
        its Anthropic-native content (LiteLLM already translated the client's messages)."""
        wire = body["messages"] = _without_turn(body["messages"])
        runs: list[list[dict[str, Any]]] = []
        previous = None
        for message in rendered.messages:
            role = message.get("role") if isinstance(message, dict) else None
            if role in ("system", "developer"):
                continue
            if role == "assistant":
                if previous == "assistant":
                    runs[-1].append(message)
                else:
                    runs.append([message])
            previous = role
        answers = [m for m in wire if isinstance(m, dict) and m.get("role") == "assistant"]
        if len(runs) != len(answers) or any(
            sum(bool(m.get("thinking_blocks")) for m in run) > 1 for run in runs
        ):
            raise RuntimeError(
                "the Anthropic body does not line up with the rendered messages; left as LiteLLM "
                "built it"
            )
        disable = self._claude_without_thinking(target, [kwargs, body], rendered.messages)
        for run, sent in zip(runs, answers, strict=True):
            blocks: list[Any] = []
            if not disable:
                for message in run:
                    blocks += message.get("thinking_blocks") or []
            content = sent.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}] if content else []
            if not isinstance(content, list):
                continue
            rest = [
                part
                for part in content
                if not (
                    isinstance(part, dict) and part.get("type") in ("thinking", "redacted_thinking")
                )
            ]
            sent["content"] = [*blocks, *rest]
        if disable:
            body.pop("thinking", None)

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """Proxy, before routing. Chat calls are rendered after routing (the deployment hook);
        other endpoints get the turn rule's one hard guarantee: `turn` never reaches them."""
        try:
            if _call_type_name(call_type) in _COMPLETION_CALL_TYPES:
                return None
            for field in ("messages", "input"):
                value = data.get(field)
                if isinstance(value, list):
                    data[field] = _without_turn(value)
        except Exception as exc:
            self._fail("the proxy pre-call hook", exc)
        return data

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncGenerator[Any, None]:
        """Proxy streams: the reply is captured from the chunks before the proxy sends `[DONE]`,
        so the client's next request finds it stored, on whichever worker it lands. (Defined on
        this class itself: the proxy skips the hook when it is only inherited.)"""
        chunks: list[Any] = []
        async for chunk in response:
            chunks.append(chunk)
            yield chunk
        call_id = request_data.get("litellm_call_id") if isinstance(request_data, dict) else None
        with self._lock:
            wanted = isinstance(call_id, str) and call_id in self._calls
        if not wanted or not chunks:
            return
        try:
            assembled = litellm.stream_chunk_builder(chunks=chunks)
        except Exception as exc:
            self._fail("assembling a proxy stream", exc)
            return
        await self._acapture(call_id, assembled)

    # ------------------------------------------------------------------ capture side

    def _claim(self, call_id: Any) -> _Call | None:
        """The call whose reply is captured now, exactly once (None: not ours, or done)."""
        if not isinstance(call_id, str):
            return None
        with self._lock:
            call = self._calls.get(call_id)
            if call is None or call_id in self._captured:
                return None
            self._captured[call_id] = None
            while len(self._captured) > self._max_tracked_calls:
                self._captured.popitem(last=False)
        return call

    def _capture(self, call_id: Any, response: Any) -> None:
        call = self._claim(call_id)
        if call is None:
            return
        try:
            records = self._records(call, response)
            if records:
                self.store.put_many(call.scope, records)
                self.stats["captured"] += len(records)
        except Exception as exc:
            self._fail("capturing the reply's reasoning", exc)
        finally:
            self._pending.close(call_id)

    async def _acapture(self, call_id: Any, response: Any) -> None:
        call = self._claim(call_id)
        if call is None:
            return
        try:
            records = self._records(call, response)
            if records:
                await self.store.aput_many(call.scope, records)
                self.stats["captured"] += len(records)
        except Exception as exc:
            self._fail("capturing the reply's reasoning", exc)
        finally:
            self._pending.close(call_id)

    def _records(self, call: _Call, response: Any) -> dict[str, Reasoning]:
        records: dict[str, Reasoning] = {}
        for choice in getattr(response, "choices", None) or ():
            message = _as_dict(getattr(choice, "message", None))
            if message is None:
                continue
            reasoning = reasoning_from_message(message, provider=call.provider, model=call.model)
            if reasoning is None or reasoning.is_empty:
                continue
            if reasoning.text == _REDACTED:
                self._fail(
                    "capture",
                    RuntimeError("LiteLLM redacted the reply (turn_off_message_logging)"),
                )
                continue
            message.setdefault("role", "assistant")
            digest = identity.extend_digest(call.digest, message)
            records[identity.message_key(call.scope, message, digest)] = reasoning
        return records

    async def async_post_call_success_deployment_hook(
        self, request_data: dict[str, Any], response: Any, call_type: Any
    ) -> Any:
        if _call_type_name(call_type) in _COMPLETION_CALL_TYPES:
            await self._acapture(request_data.get("litellm_call_id"), response)
        return None

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        if isinstance(kwargs, dict):
            await self._acapture(kwargs.get("litellm_call_id"), response_obj)

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        if isinstance(kwargs, dict):
            self._capture(kwargs.get("litellm_call_id"), response_obj)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.log_failure_event(kwargs, response_obj, start_time, end_time)

    def log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        if isinstance(kwargs, dict) and isinstance(kwargs.get("litellm_call_id"), str):
            self._pending.close(kwargs["litellm_call_id"])


_BEDROCK_FIX_LOCK = threading.Lock()


def _send_bedrock_redacted_thinking() -> None:
    """Make LiteLLM 1.106.x send `redacted_thinking` to Bedrock Converse.

    LiteLLM 1.106.12 turns a redacted block into an empty, unsigned `reasoningText` and then
    drops it, so a Claude tool loop whose reply had one can never be continued (Claude needs
    the block back). The Converse body is signed (SigV4) before any callback hook can see it,
    so it cannot be patched per request; instead LiteLLM's block converter is wrapped once to
    emit `reasoningContent.redactedContent`, as LiteLLM 1.110 does. A LiteLLM whose converter
    already knows redacted blocks (it takes `to_claude`, 1.110+) is left alone.
    """
    import inspect

    from litellm.litellm_core_utils.prompt_templates import factory

    processor = getattr(factory, "BedrockConverseMessagesProcessor", None)
    convert = getattr(processor, "translate_thinking_blocks_to_reasoning_content_blocks", None)
    if processor is None or convert is None or getattr(convert, "_litellm_reasoning", False):
        return
    with _BEDROCK_FIX_LOCK:
        convert = processor.translate_thinking_blocks_to_reasoning_content_blocks
        if getattr(convert, "_litellm_reasoning", False):
            return
        try:
            if "to_claude" in inspect.signature(convert).parameters:
                return
        except (TypeError, ValueError):
            return
        original = convert

        def translate(thinking_blocks: list[Any]) -> list[Any]:
            out: list[Any] = []
            for block in thinking_blocks:
                redacted = isinstance(block, dict) and block.get("type") == "redacted_thinking"
                data = block.get("data") if redacted else None
                if isinstance(data, str) and data:
                    out.append(
                        {"reasoningContent": {"redactedContent": bedrock_redacted_content(data)}}
                    )
                else:
                    out += original([block])
            return out

        translate._litellm_reasoning = True  # type: ignore[attr-defined]
        processor.translate_thinking_blocks_to_reasoning_content_blocks = staticmethod(translate)
        logger.debug("litellm-reasoning: LiteLLM's Bedrock converter now sends redacted_thinking")


def _without_thinking_blocks(message: Any) -> Any:
    if isinstance(message, dict) and "thinking_blocks" in message:
        return {k: v for k, v in message.items() if k != "thinking_blocks"}
    return message


def _patch_wire_message(sent: Any, want: Any) -> Any:
    """`sent` (LiteLLM's translated message) carrying exactly `want`'s reasoning, without `turn`."""
    if not isinstance(sent, dict) or not isinstance(want, dict):
        return sent
    out = strip_reasoning({k: v for k, v in sent.items() if k != TURN_KEY})
    out.update({key: want[key] for key in REASONING_KEYS if key in want})
    return out


__all__ = ["ReasoningCallback", "TurnPolicy"]
