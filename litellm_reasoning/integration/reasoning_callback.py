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

import asyncio
import base64
import contextlib
import dataclasses
import json
import logging
import re
import sys
import threading
import time
import uuid
import weakref
from collections import Counter
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import litellm
from litellm import get_llm_provider
from litellm.integrations.custom_logger import CustomLogger

from ..core import healing, identity, turns
from ..core.decisions import DECISIONS, summarize, with_summary
from ..core.extract import BLOCK_TYPES, reasoning_from_message, signature_bytes
from ..core.limits import Limited, TokenCounter, apply_limits, estimate_tokens
from ..core.policy import TurnPolicy, provider_manages_thinking, template_keeps_thinking
from ..core.reasoning import Reasoning
from ..core.render import Rendered, effective_turn_start, plan, render
from ..core.targets import RESPONSES_PREFIX, Target, TargetCache, parse_overrides, resolve_target
from ..core.turns import TURN_KEY
from ..memo.pending import PendingCaptures, await_any, wait_any
from ..memo.prefix_cache import History, PrefixCache
from ..memo.refused import RefusedRecords
from ..memo.token_counts import TokenMemo
from ..stores import MemoryStore, ReasoningStore, store_from_url
from ..wire import REASONING_KEYS, get_dialect, strip_reasoning
from ..wire.anthropic import messages as messages_format
from ..wire.anthropic.dialect import (
    CLAUDE_PROVIDERS,
    AnthropicDialect,
    apply_layout,
    bedrock_redacted_content,
    layout_candidates,
    layout_of_blocks,
    layout_of_deltas,
    ordered_blocks,
    thinking_requested,
    tool_loop_needs_thinking,
)
from ..wire.gemini import (
    GeminiDialect,
    clean_tool_results,
    requires_signed_calls,
    sign_current_steps,
)
from ..wire.openai_responses import input_items as responses_input
from ..wire.openai_responses.dialect import is_reasoning_model, with_encrypted_include
from ..wire.openrouter.stream import StreamedDetails
from . import metrics
from .calls import CallState, Capture, RenderedFor, details_of, new_state, state_in, state_of

logger = logging.getLogger("litellm_reasoning")

_COMPLETION_CALL_TYPES = frozenset({"completion", "acompletion"})
_RESPONSES_CALL_TYPES = frozenset({"responses", "aresponses"})
_MESSAGES_CALL_TYPES = frozenset({"anthropic_messages"})
_RENDERED_AFTER_ROUTING = _COMPLETION_CALL_TYPES | _RESPONSES_CALL_TYPES | _MESSAGES_CALL_TYPES
"""Call types whose `turn` the deployment hook reads (and removes) after routing."""
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
    legacy: dict[int, str]
    """Message index -> the previous release's key of a tool-call message (rolling upgrades)."""
    anchor: identity.Anchor
    """Where this call's reply will stand in its turn."""
    history: History | None = None
    """The history as hashed (kept after rendering, so the next request reuses it)."""
    origin: tuple[str, str | None] = ("", None)
    """(`identity.origin_of` the deployment, its Router id)."""


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
    return [_message_without_turn(m) for m in messages]


def _message_without_turn(message: Any) -> Any:
    if isinstance(message, dict):
        if TURN_KEY not in message:
            return message
        return {k: v for k, v in message.items() if k != TURN_KEY}
    if getattr(message, TURN_KEY, None) is None and TURN_KEY not in (
        getattr(message, "model_extra", None) or {}
    ):
        return message
    # A pydantic message object (LiteLLM's `Message`) carrying `turn` as an extra field.
    as_dict = _as_dict(message)
    if as_dict is None:
        return message
    return {k: v for k, v in as_dict.items() if k != TURN_KEY}


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
        max_reasoning_tokens: the most reasoning (estimated tokens) one request carries; earlier
            turns' reasoning is left out oldest first to fit, where the provider allows it.
        count_reasoning_tokens: the estimator for that budget and for the decisions summary
            (default `limits.estimate_tokens`: characters / 4).
        scope_from_client: honour the scope parts a client chooses itself, the end user
            (`user`) and `metadata.reasoning_namespace`. In the proxy the virtual key and team
            are the tenant boundary; these only separate cooperating clients of one key. False:
            only the namespace setting, key and team scope the records.
        legacy_keys: on a SQLite or Redis store, also read tool-call records under the keys
            release 0.1.0 used, and write a marked copy there (which this release never
            restores), so 0.1.0 and this release sharing a store keep restoring each other's
            records during a rolling upgrade. Turn off once all are upgraded and a TTL passed.
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
        max_reasoning_tokens: int | None = None,
        count_reasoning_tokens: TokenCounter | None = None,
        scope_from_client: bool = True,
        legacy_keys: bool = True,
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
        self.scope_from_client = scope_from_client
        self.legacy_keys = legacy_keys
        # Only a store that outlives the process can hold (or share) what 0.1.0 reads and wrote.
        self._legacy_keys_on = legacy_keys and self.store.persistent
        self.overrides = [
            *parse_overrides(dialects, kind="dialect"),
            *parse_overrides(policies, kind="policy"),
        ]
        self.capture_wait_seconds = capture_wait_seconds
        if max_reasoning_tokens is not None and max_reasoning_tokens < 0:
            raise ValueError("max_reasoning_tokens must be >= 0")
        self.max_reasoning_tokens = max_reasoning_tokens
        self._count_tokens: TokenCounter = count_reasoning_tokens or estimate_tokens
        self._token_memo = TokenMemo(self._count_tokens)
        self._targets = TargetCache()
        self.stats: Counter[str] = Counter()
        """What the callback did: restored, stripped, captured, missing, waited, errors."""
        # Per-call state lives in each call's own logging details (`calls`), never in a map
        # keyed by the client-settable `litellm_call_id`; only open captures are indexed here.
        self._pending = PendingCaptures(max_open=max_tracked_calls)
        self._histories = PrefixCache()
        self._warned: dict[str, float] = {}
        # Healing (`healing`): records a provider refused, and targets that asked for more.
        self._refused = RefusedRecords()
        self._healed_policies: dict[tuple[str | None, str | None, str], TurnPolicy] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # store deletes under way
        try:
            _send_bedrock_redacted_thinking()
        except Exception as exc:
            self._fail("teaching LiteLLM's Bedrock converter redacted thinking", exc)
        try:
            _watch_streams()
        except Exception as exc:
            self._fail("watching LiteLLM's streams", exc)

    @property
    def open_captures(self) -> int:
        """Calls whose reply is not captured yet (what a next request may wait for)."""
        return len(self._pending)

    @property
    def active(self) -> bool:
        """Registered in `litellm.callbacks`. LiteLLM keeps replaced instances in its internal
        event lists; a replaced instance must not touch requests any more."""
        return any(cb is self for cb in litellm.callbacks)

    # ------------------------------------------------------------------ failure reporting

    def _fail(self, where: str, exc: BaseException) -> None:
        self.stats["errors"] += 1
        if self._first_this_minute(where):
            logger.warning(
                "litellm-reasoning: %s failed (%s: %s); the request goes through unchanged "
                "except for `turn`",
                where,
                type(exc).__name__,
                exc,
            )
        else:
            logger.debug("litellm-reasoning: %s failed again", where, exc_info=exc)

    def _first_this_minute(self, where: str) -> bool:
        """One warning per `where` per minute; the rest go to DEBUG."""
        now = time.monotonic()
        if now - self._warned.get(where, -1e9) < 60.0:
            return False
        self._warned[where] = now
        return True

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
        client = self.scope_from_client
        parts = {
            "ns": (metadata.get("reasoning_namespace") if client else None) or self.namespace,
            "key": metadata.get("user_api_key_hash"),
            "team": metadata.get("user_api_key_team_id"),
            "user": (metadata.get("user_api_key_end_user_id") or kwargs.get("user"))
            if client
            else None,
        }
        return identity.scope_string(parts)

    def _target(
        self, kwargs: Mapping[str, Any], messages: Sequence[Any]
    ) -> tuple[Target, str | None, str]:
        optional = kwargs.get("optional_params")
        request = [kwargs, optional if isinstance(optional, dict) else {}]
        request += [r["extra_body"] for r in list(request) if isinstance(r.get("extra_body"), dict)]
        has_tools = any(r.get("tools") for r in request)
        preserved_thinking = provider_manages_thinking(request)
        template_kept = template_keeps_thinking(request)
        # Every input of `_deployment` and `resolve_target`: a deployment is resolved once
        # (LiteLLM's provider lookup is most of a short request's fixed cost).
        params = kwargs.get("litellm_params")
        params = params if isinstance(params, dict) else {}
        metadata = kwargs.get("metadata")
        key: tuple[Any, ...] | None = (
            kwargs.get("model"),
            kwargs.get("api_base"),
            params.get("api_base"),
            kwargs.get("custom_llm_provider"),
            params.get("custom_llm_provider"),
            metadata.get("model_group") if isinstance(metadata, dict) else None,
            has_tools,
            preserved_thinking,
            template_kept,
            *self.overrides,
        )
        try:
            resolved = self._targets.get(key)
        except TypeError:  # an unhashable input: resolved every time
            resolved, key = None, None
        if resolved is not None:
            return self._healed(*resolved)
        provider, bare_model, api_base, names = _deployment(kwargs)
        target = resolve_target(
            provider,
            bare_model,
            api_base,
            has_tools=has_tools,
            preserved_thinking=preserved_thinking,
            template_keeps_thinking=template_kept,
            names=names,
            overrides=self.overrides,
        )
        if key is not None:
            self._targets.put(key, (target, provider, bare_model))
        return self._healed(target, provider, bare_model)

    def _healed(
        self, target: Target, provider: str | None, model: str
    ) -> tuple[Target, str | None, str]:
        """The target, with the policy a refusal of this provider asked for (`_heal`)."""
        if self._healed_policies:
            policy = self._healed_policies.get((provider, model, target.dialect))
            if policy is not None and policy is not target.policy:
                why = f"{target.why}; the provider refused the previous policy ({policy.value} now)"
                target = dataclasses.replace(target, policy=policy, why=why)
        return target, provider, model

    def _begin(self, state: CallState, capture: Capture) -> None:
        """Remember what this call's capture needs, and open it for later requests to wait on."""
        state.capture = capture
        state.handled = True
        self._pending.open(state.id, capture.scope, capture.digest, state)

    def _start(self, details: dict[str, Any] | None) -> CallState:
        """A new state for this attempt of a call; the attempt it replaces (a retry) is over."""
        state, previous = new_state(details)
        if previous is not None:
            self._pending.close(previous.id)
        return state

    def _finish(self, rendered: Rendered, target: Target) -> None:
        self.stats["restored"] += len(rendered.restored)
        self.stats["stripped"] += len(rendered.stripped)
        self.stats["missing"] += len(rendered.missing)
        self.stats["dropped"] += len(rendered.dropped)
        # The per-request decisions line is `_decide`'s (after the strip rule and budget).
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
        # One pass over the history (reusing what the conversation's earlier request hashed):
        # the digests name this call's reply and the lookups.
        history = self._histories.walk(scope, messages)
        owns = history.owns
        wanted = plan(messages, dialect, target.policy, owns, history.assistant)
        if isinstance(dialect, AnthropicDialect):
            # The record of a tool-call message the client kept holds where its blocks stood.
            start = effective_turn_start(messages, dialect)
            more = layout_candidates(messages, target.policy, history.assistant, start)
            wanted = sorted({*wanted, *more})
        digests, empty = history.digests, identity.EMPTY_DIGEST
        keys = history.keys_for(wanted)
        before = {i: digests[i - 1] if i > 0 else empty for i in wanted}
        return _Request(
            kwargs,
            messages,
            target,
            provider,
            model,
            scope,
            keys,
            before,
            history.digest,
            owns,
            history.legacy_keys_for(wanted) if self._legacy_keys_on else {},
            history.anchor(len(messages)),
            history,
            _origin(kwargs, provider),
        )

    def _open_captures(
        self,
        scope: str,
        keys: Mapping[int, str],
        before: Mapping[int, str],
        found: Mapping[str, Reasoning],
    ) -> tuple[list[threading.Event], list[tuple[CallState, Any]]]:
        """Captures still running for replies this request continues and has no record of
        (`before[i]`: the conversation state message `i` answered; absent: none to wait for),
        and the finished streams among them nobody captured yet (a client that stopped
        reading at the finish chunk): those are captured now instead of waited for."""
        events: list[threading.Event] = []
        ready: list[tuple[CallState, Any]] = []
        for i, key in keys.items():
            if key in found or i not in before:
                continue
            for event, state in self._pending.owners(scope, before[i]):
                if event.is_set():
                    continue
                if isinstance(state, CallState):
                    try:
                        assembled = self._finished_stream(state)
                    except Exception as exc:
                        self._fail("assembling a finished stream", exc)
                        assembled = None
                    if assembled is not None:
                        ready.append((state, assembled))
                        continue
                events.append(event)
        return events, ready

    async def _alookup(
        self,
        scope: str,
        keys: Mapping[int, str],
        before: Mapping[int, str],
        legacy: Mapping[int, str] | None = None,
    ) -> dict[str, Reasoning]:
        """The stored records of `keys` (and, in the same read, of the `legacy` keys), waiting
        (at most `capture_wait_seconds`) for a capture still running for a reply they belong
        to (streams and sync calls capture after the caller has the reply)."""
        if not keys:
            return {}
        found = await self.store.aget_many(scope, _wanted_keys(keys, legacy))
        deadline = time.monotonic() + self.capture_wait_seconds
        while True:
            events, ready = self._open_captures(scope, keys, before, found)
            for state, assembled in ready:
                await self._acapture(state, assembled)
            if not events and not ready:
                break
            if events:
                self.stats["waited"] += 1
                if not await await_any(events, deadline):
                    break
            missing = sorted({key for key in keys.values() if key not in found})
            found.update(await self.store.aget_many(scope, missing))
        return found

    def _lookup(
        self,
        scope: str,
        keys: Mapping[int, str],
        before: Mapping[int, str],
        legacy: Mapping[int, str] | None = None,
    ) -> dict[str, Reasoning]:
        """`_alookup` for sync calls."""
        if not keys:
            return {}
        found = self.store.get_many(scope, _wanted_keys(keys, legacy))
        deadline = time.monotonic() + self.capture_wait_seconds
        while True:
            events, ready = self._open_captures(scope, keys, before, found)
            for state, assembled in ready:
                self._capture(state, assembled)
            if not events and not ready:
                break
            if events:
                self.stats["waited"] += 1
                if not wait_any(events, deadline):
                    break
            missing = sorted({key for key in keys.values() if key not in found})
            found.update(self.store.get_many(scope, missing))
        return found

    def _complete(
        self, request: _Request, found: Mapping[str, Reasoning], state: CallState
    ) -> Rendered:
        found = self._refused.without_refused(request.scope, found)
        stored = self._of_origin(
            _stored_records(request.keys, request.legacy, found),
            request.origin[0],
            request.provider,
        )
        dialect = get_dialect(request.target.dialect)
        history = request.history
        rendered = render(
            request.messages,
            dialect,
            request.target.policy,
            stored,
            request.owns,
            assistant=history.assistant if history is not None else None,
            flagged=history.flagged if history is not None else None,
            recipes=history.recipes if history is not None else None,
        )
        if isinstance(dialect, GeminiDialect):
            rendered.messages = clean_tool_results(rendered.messages)
            self._sign_gemini_steps(request, rendered)
        if isinstance(dialect, AnthropicDialect):
            state.layouts = _layouts(rendered, stored)
        if history is not None:
            self._histories.remember(history)
        limited = self._limit(request, rendered, stored)
        self._restored_into(state, request, stored, rendered.restored)
        self._begin(
            state,
            Capture(
                request.scope,
                request.digest,
                request.provider,
                request.model,
                anchor=request.anchor,
                bridged=request.target.dialect == "openai_responses",
                origin=request.origin[0],
                deployment=request.origin[1],
            ),
        )
        self._finish(rendered, request.target)
        try:
            self._decide(request.kwargs, summarize(rendered, request.target, limited), state)
        except Exception as exc:  # reporting never undoes the rendering
            self._fail("reporting the request's decisions", exc)
        return rendered

    def _of_origin(
        self, stored: dict[int, Reasoning], origin: str, provider: str | None
    ) -> dict[int, Reasoning]:
        """`stored` as this deployment may receive it: signed and encrypted parts another
        deployment of this provider issued with other credentials (another organisation,
        account or project) are left out, their text stays where the dialect takes plain
        text. Another provider's records are the dialect's to judge (`dropped_foreign`)."""
        foreign = [
            i
            for i, record in stored.items()
            if record.origin is not None
            and record.origin != origin
            and record.provider == provider
            and healing.signed_or_encrypted(record)
        ]
        if not foreign:
            return stored
        out = dict(stored)
        for i in foreign:
            readable = _readable_parts(out[i])
            if readable is None:
                del out[i]
            else:
                out[i] = readable
        self.stats["foreign_origin"] += len(foreign)
        logger.debug(
            "litellm-reasoning: the signed or encrypted reasoning of messages %s was issued by "
            "another deployment (another organisation, account or project): left out",
            foreign,
        )
        return out

    @staticmethod
    def _restored_into(
        state: CallState,
        request: _Request,
        stored: Mapping[int, Reasoning],
        restored: Sequence[int],
    ) -> None:
        """Note what went into this request from the store (what a refusal of it evicts)."""
        target = request.target
        state.rendered_for = RenderedFor(
            request.provider, request.model, target.dialect, target.policy
        )
        state.restored, state.restored_source = (
            {},
            (
                request.keys,
                request.legacy,
                stored,
                restored,
            ),
        )

    def _limit(
        self, request: _Request, rendered: Rendered, stored: Mapping[int, Reasoning]
    ) -> Limited:
        """The provider's strip rule and the budget, after the policy."""
        restored_as_rendered = list(rendered.restored)  # the limits take indices out of it
        restored: set[int] = set()

        def reasoning_at(index: int) -> Reasoning | None:
            # Asked only for what the memo does not know yet (the newest messages, or all on
            # a cold request): the set is made on the first such call.
            if not restored and restored_as_rendered:
                restored.update(restored_as_rendered)
            return stored.get(index) if index in restored else request.owns[index]

        history = request.history
        # Each message's render recipe stands for the reasoning it sent or stripped (a recipe
        # is reused only while that reasoning is the same value): counted once per recipe.
        counted = self._token_memo.bind(
            history.recipes if history is not None else None, reasoning_at
        )
        limited = apply_limits(
            rendered,
            request.messages,
            get_dialect(request.target.dialect),
            request.target.policy,
            strip=request.target.strip,
            max_tokens=self.max_reasoning_tokens,
            counted=counted,
            assistant=history.assistant if history is not None else None,
        )
        self.stats["over_budget"] += len(limited.over_budget)
        return limited

    def _decide(self, kwargs: Mapping[str, Any], summary: dict[str, Any], state: CallState) -> None:
        """Make one request's decisions visible: Prometheus, one DEBUG line, and LiteLLM's
        logging metadata (`spend_logs_metadata.litellm_reasoning`)."""
        metrics.record(summary)
        self.stats["reasoning_tokens_sent"] += summary["reasoning_tokens"]["sent"]
        self.stats["reasoning_tokens_saved"] += summary["reasoning_tokens"]["saved"]
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("litellm-reasoning decisions: %s", json.dumps(summary, sort_keys=True))
        params = kwargs.get("litellm_params")
        if isinstance(params, dict) and isinstance(kwargs, dict) and "additional_args" in kwargs:
            # Sync path: `kwargs` is LiteLLM's logging state itself.
            _attach_summary(params, summary)
            state.reported = summary
            return
        state.summary = summary

    @staticmethod
    def _attach_decisions(kwargs: Any, state: CallState) -> None:
        """Async paths: put the rendered call's summary on LiteLLM's logging metadata, which
        exists by `log_pre_api_call` (the deployment hook's `metadata` is not that dict)."""
        summary, state.summary = state.summary, None
        params = kwargs.get("litellm_params")
        if summary is not None and isinstance(params, dict):
            _attach_summary(params, summary)
            state.reported = summary

    def _sign_gemini_steps(self, request: _Request, rendered: Rendered) -> None:
        """Gemini 3+ rejects a current-turn step whose first function call is unsigned (a call
        another provider made before a switch, a store miss): it gets the signature the client
        kept in the call's id, or the documented dummy (counted in `stats["dummy_signatures"]`)."""
        if not requires_signed_calls(request.model or ""):
            return
        rendered.messages, from_ids, dummies = sign_current_steps(
            request.messages, rendered.messages, rendered.turn_start, rendered.missing
        )
        self.stats["dummy_signatures"] += len(dummies)
        if from_ids or dummies:
            logger.debug(
                "litellm-reasoning: %s: first function calls of messages %s signed with the "
                "signature kept in their id, of messages %s with the dummy signature (no "
                "signature from this platform)",
                request.target.dialect,
                from_ids,
                dummies,
            )

    async def _arender(
        self, kwargs: Mapping[str, Any], messages: list[Any], state: CallState
    ) -> tuple[Rendered, Target]:
        request = self._prepare(kwargs, messages)
        found = await self._alookup(request.scope, request.keys, request.before, request.legacy)
        return self._complete(request, found, state), request.target

    def _render_sync(
        self, kwargs: Mapping[str, Any], messages: list[Any], state: CallState
    ) -> tuple[Rendered, Target]:
        request = self._prepare(kwargs, messages)
        found = self._lookup(request.scope, request.keys, request.before, request.legacy)
        return self._complete(request, found, state), request.target

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        messages = kwargs.get("messages")
        if _call_type_name(call_type) in _RESPONSES_CALL_TYPES:
            return await self._responses_pre_call(kwargs)
        if _call_type_name(call_type) in _MESSAGES_CALL_TYPES:
            return await self._messages_pre_call(kwargs)
        if _call_type_name(call_type) not in _COMPLETION_CALL_TYPES or not isinstance(
            messages, list
        ):
            return None
        if not self.active:
            return None
        state = self._start(details_of(kwargs))
        try:
            rendered, target = await self._arender(kwargs, messages, state)
            kwargs["messages"] = rendered.messages
            if target.dialect == "openai_responses":
                _ask_for_encrypted_content(kwargs, target)
            if get_dialect(target.dialect).patches_body:
                state.body_patch = (target.dialect, rendered.messages)
            elif state.layouts:
                state.body_patch = (_LAYOUT_PATCH, rendered.messages)
            if self._claude_without_thinking(target, [kwargs], rendered.messages):
                state.layouts, state.body_patch = {}, None
                state.forget_restored()
                # LiteLLM's `modify_params` behaviour, for this call only.
                kwargs["messages"] = [_without_thinking_blocks(m) for m in rendered.messages]
                for name in ("thinking", "reasoning_effort"):
                    kwargs.pop(name, None)
        except Exception as exc:
            self._fail("rendering the request", exc)
            state.handled = True
            state.forget_restored()
            kwargs["messages"] = _without_turn(messages)
        return kwargs

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
        """Sync calls (and positional-`messages` async calls): rewrite the provider body.

        Also every further attempt of a call LiteLLM retries itself (`num_retries`): it builds
        the body again from the caller's messages (the deployment hook does not run again), so
        the attempt is rendered here, after healing what the failed attempt was refused for."""
        try:
            state = state_in(kwargs)
            if state is not None and state.sent:
                failed = sys.exc_info()[1]
                body = (kwargs.get("additional_args") or {}).get("complete_input_dict")
                if _placeholders_for_restored(state, body):
                    # LiteLLM 1.110+ retries a Gemini refusal itself, every signature swapped
                    # for its placeholder on purpose: the restored ones were refused, and that
                    # body stays as LiteLLM made it.
                    failed = RuntimeError("Corrupted thought signature (retried by LiteLLM)")
                    self._heal_before_retry(state, failed)
                    return
                self._heal_before_retry(state, failed)
                if state.messages_format:
                    return  # an Anthropic-format body is never edited as a chat body
                # Another attempt built from the caller's messages (LiteLLM's retry of the
                # call, a transport retry): rendered again.
                state = None
            handled = state is not None and state.handled
            if state is not None:
                state.sent = True
            patch = None
            if state is not None and handled:
                patch, state.body_patch = state.body_patch, None
            body = (kwargs.get("additional_args") or {}).get("complete_input_dict")
            if state is not None and handled:
                self._attach_decisions(kwargs, state)
                if patch is not None and patch[0] == _LAYOUT_PATCH and isinstance(body, dict):
                    _lay_out_claude_body(body, patch[1], state.layouts)
                    return
                if patch is not None and isinstance(body, dict):
                    # Rendered already; put what LiteLLM's translation lost back on the body.
                    body["messages"] = _patch_assistants(
                        body.get("messages"), patch[1], get_dialect(patch[0])
                    )
                return
            if not self.active:
                return
            if isinstance(body, dict) and isinstance(body.get("contents"), list):
                self._patch_gemini_body(body, model, messages, kwargs)
                return
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                return
            wire = body["messages"] = _without_turn(body["messages"])
            try:
                if not isinstance(messages, list):
                    raise TypeError("no messages to render")
                state = self._start(kwargs)
                state.sent = True
                rendered, target = self._render_sync(kwargs, messages, state)
            except Exception as exc:
                self._fail("rendering the request", exc)
                body["messages"] = _without_turn(wire)
                return
            if isinstance(get_dialect(target.dialect), AnthropicDialect):
                restored = state.restored, state.restored_source
                state.forget_restored()
                if self._patch_anthropic_body(body, rendered, target, kwargs, state.layouts):
                    state.restored, state.restored_source = restored
                return
            if get_dialect(target.dialect).patches_wire:
                body["messages"] = _patch_assistants(
                    wire, rendered.messages, get_dialect(target.dialect)
                )
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

    def _patch_gemini_body(
        self, body: dict[str, Any], model: Any, messages: Any, kwargs: Any
    ) -> None:
        """Sync calls to Gemini (and positional-`messages` async ones): LiteLLM built `contents`
        from the client's messages; they are rebuilt by LiteLLM's own converter from the rendered
        messages (the body is serialised only after this hook)."""
        try:
            if not isinstance(messages, list):
                raise TypeError("no messages to render")
            state = self._start(kwargs)
            state.sent = True  # a next `log_pre_api_call` of this call is another attempt
            rendered, target = self._render_sync(kwargs, messages, state)
        except Exception as exc:
            self._fail("rendering the request", exc)
            return
        dialect = get_dialect(target.dialect)
        if not isinstance(dialect, GeminiDialect) or "cachedContent" in body:
            return  # nothing to change (`turn` never reaches a Gemini body)
        contents = _gemini_contents(rendered.messages, str(model or ""), kwargs, dialect, body)
        if len(contents) != len(body["contents"]):
            raise RuntimeError("the Gemini body does not line up with the rendered messages")
        body["contents"] = contents

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
        self,
        body: dict[str, Any],
        rendered: Rendered,
        target: Target,
        kwargs: Any,
        layouts: Mapping[int, tuple[tuple[str, ...], list[dict[str, Any]]]],
    ) -> bool:
        """Sync calls to Claude: put each assistant message's rendered thinking blocks in its
        Anthropic-native content (LiteLLM already translated the client's messages): where they
        stood in the reply when its record says so, first otherwise. False: thinking was
        turned off for this call (no block sent)."""
        wire = body["messages"] = _without_turn(body["messages"])
        runs = _assistant_runs(rendered.messages)
        answers = [m for m in wire if isinstance(m, dict) and m.get("role") == "assistant"]
        if len(runs) != len(answers) or any(
            sum(bool(rendered.messages[i].get("thinking_blocks")) for i in run) > 1 for run in runs
        ):
            raise RuntimeError(
                "the Anthropic body does not line up with the rendered messages; left as LiteLLM "
                "built it"
            )
        disable = self._claude_without_thinking(target, [kwargs, body], rendered.messages)
        for run, sent in zip(runs, answers, strict=True):
            blocks: list[Any] = []
            if not disable:
                for index in run:
                    blocks += rendered.messages[index].get("thinking_blocks") or []
            content = sent.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}] if content else []
            if not isinstance(content, list):
                continue
            rest = [
                part
                for part in content
                if not (isinstance(part, dict) and part.get("type") in BLOCK_TYPES)
            ]
            sent["content"] = [*blocks, *rest]
            if not disable:
                _lay_out(run, sent, layouts)
        if disable:
            body.pop("thinking", None)
        return not disable

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """Proxy, before routing. Chat and Responses calls are rendered after routing (the
        deployment hook, which also removes `turn`: it must still be there for the turn rule);
        other endpoints get the turn rule's one hard guarantee: `turn` never reaches them."""
        try:
            if _call_type_name(call_type) in _RENDERED_AFTER_ROUTING:
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
        state = state_of(request_data)
        chunks: list[Any] = []
        finished = False
        sse: list[str] = []  # `/v1/messages`: the raw SSE text so far
        try:
            async for chunk in response:
                chunks.append(chunk)
                if state is not None and isinstance(chunk, bytes | str):
                    await self._capture_sse(state, sse, chunk)
                yield chunk
            finished = True
        finally:
            if not finished and state is not None:
                # The client went away (or the stream broke): nothing partial is stored (also
                # not from LiteLLM's success event for the cut stream), and a next request of
                # the conversation need not wait for a capture that never comes.
                state.claim()
                self._pending.close(state.id)
        if state is None or state.capture is None or not chunks:
            return
        if isinstance(chunks[0], bytes | str):
            # Raw SSE (the proxy's Anthropic-format `/v1/messages`): not LiteLLM chunks, so not
            # assembled here; never an error for a normal request.
            return
        if not any(map(_finishes, chunks)):
            # Ended without the provider's finish: a cut stream is not a reply to keep.
            state.claim()
            self._pending.close(state.id)
            return
        try:
            assembled = litellm.stream_chunk_builder(chunks=chunks)
        except Exception as exc:
            self._fail("assembling a proxy stream", exc)
            return
        await self._acapture(state, assembled, chunks)

    # ------------------------------------------------------------------ capture side

    def _finished_stream(self, state: CallState) -> Any:
        """The assembled reply of a stream whose provider finished, when its capture was not
        made yet (a client that stopped reading at the finish chunk); None otherwise."""
        wrapper = state.stream() if state.stream is not None else None
        if wrapper is None or state.captured or not _stream_finished(wrapper):
            return None
        return litellm.stream_chunk_builder(chunks=list(getattr(wrapper, "chunks", None) or ()))

    def _report_transformations(
        self, capture: Capture, state: CallState, response: Any, raw: dict[str, Any] | None
    ) -> None:
        """Claude's `input_transformations` (blocks of the request the API dropped or let
        through silently): into the request's decisions summary, counted, logged at DEBUG."""
        if capture.provider not in CLAUDE_PROVIDERS:
            return
        found = _input_transformations(response, raw)
        if not found:
            return
        self.stats["input_transformations"] += len(found)
        if state.reported is not None:
            state.reported["input_transformations"] = found
        logger.debug(
            "litellm-reasoning: Claude transformed %d block(s) of the request: %s",
            len(found),
            found,
        )

    def _capturable(self, state: CallState, response: Any) -> bool:
        if _may_capture(state, response):
            return True
        state.claim()  # a stream cut before its finish: never kept, and nothing to wait for
        self._pending.close(state.id)
        return False

    def _records_of(
        self, state: CallState, response: Any, source: Any
    ) -> tuple[Capture, dict[str, Reasoning]]:
        capture = state.claim()
        if capture is None:
            return Capture("", "", None, None), {}
        try:
            raw = _raw_claude_reply(capture, source)
            layout = _reply_layout(capture, state, source, raw)
            self._report_transformations(capture, state, response, raw)
            records = self._records(capture, response, state.streamed_details, layout)
            if capture.origin is not None:
                records = {
                    key: dataclasses.replace(
                        record, origin=capture.origin, deployment=capture.deployment
                    )
                    for key, record in records.items()
                }
            return capture, records
        except Exception as exc:
            self._fail("capturing the reply's reasoning", exc)
            return capture, {}

    def _capture(self, state: CallState | None, response: Any, source: Any = None) -> None:
        """`source`: the reply's stream chunks, or LiteLLM's logging details holding the raw
        body (where the order of Claude's blocks is read)."""
        if state is None or not self._capturable(state, response):
            return
        try:
            capture, records = self._records_of(state, response, source)
            if records:
                self.store.put_many(capture.scope, records)
                self.stats["captured"] += _primary(records)
        except Exception as exc:
            self._fail("capturing the reply's reasoning", exc)
        finally:
            self._pending.close(state.id)

    async def _acapture(self, state: CallState | None, response: Any, source: Any = None) -> None:
        if state is None or not self._capturable(state, response):
            return
        try:
            capture, records = self._records_of(state, response, source)
            if records:
                await self.store.aput_many(capture.scope, records)
                self.stats["captured"] += _primary(records)
        except Exception as exc:
            self._fail("capturing the reply's reasoning", exc)
        finally:
            self._pending.close(state.id)

    def _records(
        self,
        call: Capture,
        response: Any,
        streamed: StreamedDetails | None = None,
        layout: tuple[str, ...] = (),
    ) -> dict[str, Reasoning]:
        output = _responses_output(response)
        if output is None and call.responses_input:
            # LiteLLM's bridge rendered through the Responses hook (sync calls): its chat reply.
            choices = getattr(response, "choices", None) or [None]
            message = _as_dict(getattr(choices[0], "message", None))
            output = responses_input.output_from_chat(message) if message else None
        if output is not None:
            return self._responses_records(call, output)
        records: dict[str, Reasoning] = {}
        for number, choice in enumerate(getattr(response, "choices", None) or ()):
            message = _as_dict(getattr(choice, "message", None))
            if message is None:
                continue
            if streamed is not None:
                _add_streamed_details(message, streamed, choice, number)
            reasoning = reasoning_from_message(message, provider=call.provider, model=call.model)
            if reasoning is not None:
                reasoning = _sendable(reasoning)
            if reasoning is not None and layout and number == 0:
                calls = message.get("tool_calls") or ()
                if layout.count("r") == len(reasoning.parts) and layout.count("u") == len(calls):
                    reasoning = dataclasses.replace(reasoning, layout=layout)
            if reasoning is None or reasoning.is_empty:
                continue
            if reasoning.text == _REDACTED:
                self._fail(
                    "capture",
                    RuntimeError("LiteLLM redacted the reply (turn_off_message_logging)"),
                )
                continue
            message.setdefault("role", "assistant")
            shape = identity.canonical(message)
            digest = identity.chain(call.digest, shape)
            key = identity.message_key(call.scope, message, digest, shape, call.anchor)
            records[key] = reasoning
            legacy = (
                identity.legacy_tool_call_key(call.scope, message, shape)
                if self._legacy_keys_on
                else None
            )
            if legacy is not None:  # for replicas still on the previous release
                records[legacy] = dataclasses.replace(reasoning, superseded=True)
        return records

    async def async_post_call_success_deployment_hook(
        self, request_data: dict[str, Any], response: Any, call_type: Any
    ) -> Any:
        state = state_of(request_data)
        if _call_type_name(call_type) in _COMPLETION_CALL_TYPES:
            await self._acapture(state, response, details_of(request_data))
        elif _call_type_name(call_type) in _RESPONSES_CALL_TYPES:
            capture = state.capture if state is not None else None
            if capture is not None and capture.responses_input and _responses_output(response):
                await self._acapture(state, response)
        elif _call_type_name(call_type) in _MESSAGES_CALL_TYPES and isinstance(response, dict):
            await self._capture_message(state, response.get("content"))
        return None

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        await self._acapture(state_in(kwargs), response_obj, kwargs)

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._capture(state_in(kwargs), response_obj, kwargs)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        try:
            if evict := self._failed(kwargs):
                await self.store.adelete_many(*evict)
        except Exception as exc:
            self._fail("evicting refused reasoning from the store", exc)

    def log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        try:
            if evict := self._failed(kwargs):
                self.store.delete_many(*evict)
        except Exception as exc:
            self._fail("evicting refused reasoning from the store", exc)

    def _failed(self, details: Any) -> tuple[str, list[str]] | None:
        """A failed call: nothing to wait for any more, and what its refusal evicts."""
        state = state_in(details)
        if state is None:
            return None
        self._pending.close(state.id)
        return self._heal(state, details)

    def _heal_before_retry(self, state: CallState, failed: BaseException | None) -> None:
        """LiteLLM retries a call from inside its `except` block, before any failure event: the
        attempt that failed is the exception being handled."""
        if failed is None:
            return
        evict = self._heal(state, {"exception": failed})
        if not evict:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.store.delete_many(*evict)
            return
        # The refused set already keeps them out of this retry; the store (every replica)
        # follows without blocking the event loop.
        task = loop.create_task(self.store.adelete_many(*evict))
        self._tasks.add(task)
        task.add_done_callback(self._deleted)

    def _deleted(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._fail("evicting refused reasoning from the store", task.exception())  # type: ignore[arg-type]

    def _heal(self, state: CallState, details: Mapping[str, Any]) -> tuple[str, list[str]] | None:
        """A refusal of reasoning this call's request carried because of the callback: the
        records restored into it are never restored again (this process's refused set now; the
        store's delete, returned as (scope, keys), for every replica), or the target moves to
        the policy the provider asked for. Runs before LiteLLM's own retry of the call (its
        failure handler is awaited first) and before the client can resend it."""
        target, capture = state.rendered_for, state.capture
        exception = details.get("exception")
        if target is None or capture is None or exception is None:
            return None
        refusal = healing.classify(str(exception))
        if refusal is None:
            return None
        restored = state.restored_records()
        state.forget_restored()  # one healing per refused request
        healed = healing.heal(refusal, restored, target.policy)
        if healed is None:
            return None
        self.stats["refusals_healed"] += 1
        metrics.record_refusal(target.dialect, refusal.value)
        evicted = {key: restored[key] for key in healed.evict}
        if evicted:
            self._refused.add(capture.scope, evicted)
            self.stats["refused_records"] += len(evicted)
        if healed.policy is not None:
            self._healed_policies[(target.provider, target.model, target.dialect)] = healed.policy
        if isinstance(state.reported, dict):
            state.reported["refused"] = {
                "kind": refusal.value,
                "evicted": len(evicted),
                **({"policy": healed.policy.value} if healed.policy is not None else {}),
            }
        self._warn_refusal(target, refusal, len(evicted), healed.policy)
        return (capture.scope, list(evicted)) if evicted else None

    def _warn_refusal(
        self,
        target: RenderedFor,
        refusal: healing.Refusal,
        evicted: int,
        policy: TurnPolicy | None,
    ) -> None:
        if not self._first_this_minute(f"refusal:{target.dialect}:{refusal.value}"):
            return
        if policy is not None:
            logger.warning(
                "litellm-reasoning: %s/%s refused a request for its reasoning (%s); its "
                "requests now carry reasoning as policy %s",
                target.provider,
                target.model,
                refusal.value,
                policy.value,
            )
        else:
            logger.warning(
                "litellm-reasoning: %s/%s refused reasoning this callback restored (%s): %d "
                "record(s) evicted, never restored again; a retry goes without them",
                target.provider,
                target.model,
                refusal.value,
                evicted,
            )

    # ------------------------------------------------------------------ OpenAI Responses API

    async def _responses_pre_call(self, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """`responses` / `aresponses` (SDK, Router, proxy `/v1/responses`): the stored reasoning
        items go back before the items they preceded. LiteLLM's chat bridge fires this hook too,
        after the chat hook rendered its messages; then only `turn` is removed."""
        items = kwargs.get("input")
        if not isinstance(items, list) or not self.active:
            return None
        details = details_of(kwargs)
        try:
            previous = state_in(details)
            bridged = (
                previous is not None
                and previous.capture is not None
                and not (previous.capture.responses_input)
            )
            target, provider, model = self._responses_target(kwargs)
            if bridged or target.dialect != "openai_responses":
                kwargs["input"] = turns.without_turn(items)
                return kwargs
            state = self._start(details)
            scope = self._scope(kwargs)
            conversation = responses_input.Conversation.of(scope, items)
            keys = responses_input.wanted(conversation, target.policy)
            # A reply is filed under the state before the item it precedes (none before item 0).
            before = {i: conversation.digests[i - 1] for i in keys if i > 0}
            found = self._refused.without_refused(scope, await self._alookup(scope, keys, before))
            origin = _origin(kwargs, provider)
            stored = self._of_origin(
                {i: found[key] for i, key in keys.items() if key in found}, origin[0], provider
            )
            rendered = responses_input.render_input(
                items, stored, store=_request_param(kwargs, "store") is not False
            )
            kwargs["input"] = rendered.items
            if target.policy is not TurnPolicy.NONE:
                _ask_for_encrypted_content(kwargs, target, model)
            self.stats["restored"] += len(rendered.restored)
            self.stats["dropped"] += len(rendered.dropped)
            state.rendered_for = RenderedFor(provider, model, target.dialect, target.policy)
            state.restored = {keys[i]: stored[i] for i in rendered.restored if i in stored}
            self._begin(
                state,
                Capture(
                    scope,
                    conversation.digest,
                    provider,
                    model,
                    responses_input=True,
                    origin=origin[0],
                    deployment=origin[1],
                ),
            )
        except Exception as exc:
            self._fail("rendering the Responses input", exc)
            kwargs["input"] = turns.without_turn(items)
        return kwargs

    # ------------------------------------------------------------------ Anthropic Messages API

    async def _messages_pre_call(self, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """`/v1/messages` (Claude Code, the Anthropic SDKs) to a deployment LiteLLM sends the
        Anthropic body to (this hook's rewrite reaches the wire): thinking blocks a client
        dropped go back in place, for the current turn and for the earlier turns the target's
        policy keeps; nothing the client sent is taken out but `turn`."""
        messages = kwargs.get("messages")
        if not isinstance(messages, list) or not self.active:
            return None
        state = self._start(details_of(kwargs))
        state.handled = state.messages_format = True  # never edited as a chat body later
        try:
            cleaned = turns.without_turn(messages)
            kwargs["messages"] = cleaned
            target, provider, model = self._target(kwargs, [])
            dialect = get_dialect(target.dialect)
            if not isinstance(dialect, AnthropicDialect):
                return kwargs
            scope = self._scope(kwargs)
            origin = _origin(kwargs, provider)
            digests = messages_format.prefix_digests(cleaned)
            start = messages_format.turn_start(messages)
            wanted: dict[int, str] = {}
            for i, message in enumerate(cleaned):
                if (
                    isinstance(message, dict)
                    and message.get("role") == "assistant"
                    and not messages_format.reasoning_blocks(message)
                    and _messages_keeps(target.policy, i, start, message)
                ):
                    wanted[i] = messages_format.message_key(scope, digests[i], message)
            before = {i: digests[i] for i in wanted}
            found = self._refused.without_refused(scope, await self._alookup(scope, wanted, before))
            stored = {
                i: found[key]
                for i, key in wanted.items()
                if key in found and dialect.accepts(found[key])
            }
            stored = self._of_origin(stored, origin[0], provider)
            # Earlier turns: Claude lets a leading run of blocks go, not one in the middle.
            last_miss = max((i for i in wanted if i < start and i not in stored), default=-1)
            out, restored, restored_at = list(cleaned), {}, []
            for i, record in stored.items():
                if i < last_miss:
                    continue
                message = messages_format.with_blocks(cleaned[i], record)
                if message is not None:
                    out[i], restored[wanted[i]] = message, record
                    restored_at.append(i)
            kwargs["messages"] = out
            missing = [i for i in wanted if i > start and i not in stored]
            self.stats["restored"] += len(restored)
            self.stats["missing"] += len(missing)
            self._decide_messages(kwargs, state, target, out, restored_at, missing)
            state.rendered_for = RenderedFor(provider, model, target.dialect, target.policy)
            state.restored = restored
            self._begin(
                state,
                Capture(
                    scope,
                    digests[-1],
                    provider,
                    model,
                    origin=origin[0],
                    deployment=origin[1],
                    messages_format=True,
                ),
            )
        except Exception as exc:
            self._fail("rendering the Anthropic-format request", exc)
            state.forget_restored()
            kwargs["messages"] = turns.without_turn(messages)
        return kwargs

    async def _capture_sse(self, state: CallState, sse: list[str], chunk: bytes | str) -> None:
        """One chunk of a `/v1/messages` stream: at `message_stop` (before the client has that
        event) the reply is captured from the SSE text received."""
        try:
            if state.captured or not state.messages_format:
                return
            text = chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else chunk
            sse.append(text)
            if "message_stop" not in "".join(sse[-2:]):
                return
            content = messages_format.content_of_stream("".join(sse))
        except Exception as exc:
            self._fail("reading a /v1/messages stream", exc)
            return
        if content is not None:
            await self._capture_message(state, content)

    def _decide_messages(
        self,
        kwargs: Mapping[str, Any],
        state: CallState,
        target: Target,
        messages: Sequence[Any],
        restored: Sequence[int],
        missing: Sequence[int],
    ) -> None:
        """The decisions summary of an Anthropic-format request (as `decisions.summarize` makes
        it for chat): Prometheus, one DEBUG line, LiteLLM's logging metadata."""
        per_message: dict[str, str] = {}
        sent = 0
        for i, message in enumerate(messages):
            blocks = messages_format.reasoning_blocks(message)
            if blocks:
                per_message[str(i)] = "restored" if i in restored else "kept"
                record = messages_format.record_of_reply(blocks, provider=None, model=None)
                sent += self._count_tokens(record) if record is not None else 0
        per_message.update(dict.fromkeys(map(str, missing), "missing"))
        counts = dict.fromkeys(DECISIONS, 0)
        counts.update(Counter(per_message.values()))
        summary = {
            "policy": target.policy.value,
            "dialect": target.dialect,
            "why": target.why,
            "messages": per_message,
            "counts": counts,
            "reasoning_tokens": {"sent": sent, "saved": 0},
        }
        self._decide(kwargs, summary, state)

    async def _capture_message(self, state: CallState | None, content: Any) -> None:
        """An Anthropic-format reply's content blocks, kept under the key its assistant message
        will have when the client sends it back."""
        if state is None or not isinstance(content, list):
            return
        capture = state.claim()
        try:
            if capture is None or not capture.messages_format:
                return
            record = messages_format.record_of_reply(
                content, provider=capture.provider, model=capture.model
            )
            if record is None:
                return
            record = dataclasses.replace(
                record, origin=capture.origin, deployment=capture.deployment
            )
            message = {"role": "assistant", "content": content}
            key = messages_format.message_key(capture.scope, capture.digest, message)
            await self.store.aput_many(capture.scope, {key: record})
            self.stats["captured"] += 1
        except Exception as exc:
            self._fail("capturing the Anthropic-format reply", exc)
        finally:
            self._pending.close(state.id)

    def _responses_target(self, kwargs: Mapping[str, Any]) -> tuple[Target, str | None, str]:
        """The target of a native Responses call: resolved as the `responses/<model>` model of
        its provider, so overrides and the providers table treat both paths alike."""
        provider, bare, api_base, names = _deployment(kwargs)
        names = [bare, *names]
        target = resolve_target(
            provider, RESPONSES_PREFIX + bare, api_base, names=names, overrides=self.overrides
        )
        return target, provider, bare

    def _responses_records(
        self, call: Capture, output: list[dict[str, Any]]
    ) -> dict[str, Reasoning]:
        if call.responses_input:
            conversation = responses_input.Conversation(call.scope, [], digest=call.digest)
            return responses_input.records(
                conversation, output, provider=call.provider, model=call.model
            )
        # The chat bridge: keyed as the assistant chat message LiteLLM made of the reply.
        message = responses_input.chat_message(output)
        return self._records(call, _OneMessage(message))

    async def async_post_call_streaming_deployment_hook(
        self, request_data: dict[str, Any], response_chunk: Any, call_type: Any
    ) -> Any:
        """Streams, as each chunk passes (before the caller has it). Chat streams: at the
        provider's finish chunk the reply is captured, so a client that stops reading there (a
        common `break`) still has it kept. Responses streams (native and the chat bridge):
        each finished output item is kept from `response.output_item.done` (the complete
        `encrypted_content`, the copy clients send back), and the reply is captured at
        `response.completed`, before the caller has the last event."""
        try:
            state = state_of(request_data)
            if state is None or state.capture is None:
                return None
            kind = _call_type_name(getattr(response_chunk, "type", None))
            if kind not in ("response.output_item.done", "response.completed"):
                if getattr(response_chunk, "choices", None) is not None and not (
                    state.capture.bridged
                ):
                    assembled = self._finished_stream(state)
                    if assembled is not None:
                        await self._acapture(state, assembled)
                return None
            if kind == "response.output_item.done":
                item = _as_dict(getattr(response_chunk, "item", None))
                index = getattr(response_chunk, "output_index", None)
                if item is not None:
                    done = state.responses_items
                    done[index if isinstance(index, int) else len(done)] = item
                return None
            done, state.responses_items = state.responses_items, {}
            output = _responses_output(getattr(response_chunk, "response", None)) or []
            output = [done.get(i, item) for i, item in enumerate(output)]
            await self._acapture(state, _Output(output))
        except Exception as exc:
            self._fail("capturing a stream", exc)
        return None


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


_STREAM_WATCH_LOCK = threading.Lock()


def _watch_streams() -> None:
    """Tie each LiteLLM stream to its call's state (once per process).

    Two things are read from the stream itself, per call and never from a process-wide table:
    whether the provider finished it (a stream cut before its finish is never stored, and one a
    client stopped reading at its finish chunk is still captured), and OpenRouter's raw
    `reasoning_details`, which LiteLLM (1.106.12 and 1.110.2) keeps on the chunks it yields but
    drops from the chunk carrying only a Claude signature and from the assembled stream, so they
    are read where OpenRouter's chunks are parsed.
    """
    from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
    from litellm.llms.openrouter.chat import transformation

    handler = transformation.OpenRouterChatCompletionStreamingHandler
    with _STREAM_WATCH_LOCK:
        init = CustomStreamWrapper.__init__
        if not getattr(init, "_litellm_reasoning", False):

            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                init(self, *args, **kwargs)
                with contextlib.suppress(Exception):  # watching must never break the stream
                    logging_obj = getattr(self, "logging_obj", None)
                    state = state_in(getattr(logging_obj, "model_call_details", None))
                    # The first wrapper is the provider's stream; a Router may wrap it again.
                    if state is not None and (state.stream is None or state.stream() is None):
                        state.stream = weakref.ref(self)
                        stream = getattr(self, "completion_stream", None)
                        if isinstance(stream, handler):
                            state.streamed_details = StreamedDetails()
                            stream._litellm_reasoning_state = state

            __init__._litellm_reasoning = True  # type: ignore[attr-defined]
            CustomStreamWrapper.__init__ = __init__

        parse = handler.chunk_parser
        if getattr(parse, "_litellm_reasoning", False):
            return

        def chunk_parser(self: Any, chunk: dict[str, Any]) -> Any:
            with contextlib.suppress(Exception):  # watching must never break the stream
                state = getattr(self, "_litellm_reasoning_state", None)
                details = state.streamed_details if isinstance(state, CallState) else None
                if details is not None:
                    for choice in chunk.get("choices") or ():
                        delta = choice.get("delta") or {}
                        details.feed(
                            choice.get("index", 0),
                            delta.get("reasoning_details"),
                            finished=choice.get("finish_reason") is not None,
                        )
            return parse(self, chunk)

        chunk_parser._litellm_reasoning = True  # type: ignore[attr-defined]
        handler.chunk_parser = chunk_parser


def _add_streamed_details(
    message: dict[str, Any], streamed: StreamedDetails, choice: Any, number: int
) -> None:
    """A streamed OpenRouter reply: put its merged `reasoning_details` on `message` (only when
    complete; LiteLLM's assembled message has none)."""
    psf = message.get("provider_specific_fields")
    if message.get("reasoning_details") or (isinstance(psf, dict) and psf.get("reasoning_details")):
        return
    index = getattr(choice, "index", None)
    details = streamed.take(index if isinstance(index, int) else number)
    if details:
        message["reasoning_details"] = details


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _sendable(reasoning: Reasoning) -> Reasoning | None:
    """`reasoning` as it can go back on the wire. A lone UTF-16 surrogate (an emoji LiteLLM
    split across two stream chunks) is valid JSON but no HTTP client can send it: in plain
    text it becomes U+FFFD; signed text cannot change, so such a record is not kept."""
    if not any(_LONE_SURROGATE.search(part.text) for part in reasoning.parts):
        return reasoning
    if any(part.signature for part in reasoning.parts if _LONE_SURROGATE.search(part.text)):
        logger.warning(
            "litellm-reasoning: a signed reasoning block holds a broken character (a lone "
            "surrogate); it cannot be sent back and is not kept"
        )
        return None
    parts = tuple(
        dataclasses.replace(part, text=_LONE_SURROGATE.sub("\ufffd", part.text))
        for part in reasoning.parts
    )
    return dataclasses.replace(reasoning, parts=parts)


_LAYOUT_PATCH = "claude block order"
"""`CallState.body_patch` kind: Claude's blocks put back in their original order."""


def _layouts(
    rendered: Rendered, stored: Mapping[int, Reasoning]
) -> dict[int, tuple[tuple[str, ...], list[dict[str, Any]]]]:
    """For each kept Claude message whose record knows where its blocks stood: the layout and
    its blocks in their original order. A client that kept the blocks gets them in that order
    too (LiteLLM and many clients regroup them), when they are exactly the recorded blocks."""
    out: dict[int, tuple[tuple[str, ...], list[dict[str, Any]]]] = {}
    for index in rendered.kept:
        message = rendered.messages[index]
        sent = message.get("thinking_blocks") if isinstance(message, dict) else None
        found = ordered_blocks(stored.get(index), sent if isinstance(sent, list) else [])
        if found is None:
            continue
        out[index] = found
        if sent != found[1]:
            rendered.messages[index] = {**message, "thinking_blocks": found[1]}
    return out


def _assistant_runs(messages: Sequence[Any]) -> list[list[int]]:
    """Indices of the rendered assistant messages, grouped as the Anthropic body holds them
    (LiteLLM merges consecutive assistant messages; system messages leave the list)."""
    runs: list[list[int]] = []
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role in ("system", "developer"):
            continue
        if role == "assistant":
            if previous == "assistant":
                runs[-1].append(index)
            else:
                runs.append([index])
        previous = role
    return runs


def _lay_out_claude_body(
    body: dict[str, Any],
    rendered: Sequence[Any],
    layouts: Mapping[int, tuple[tuple[str, ...], list[dict[str, Any]]]],
) -> None:
    """Each laid-out assistant message of the Anthropic body LiteLLM built, its blocks where
    they stood in the reply (LiteLLM puts every thinking block first). A message that does not
    line up is left as LiteLLM built it."""
    wire = body.get("messages")
    if not isinstance(wire, list) or not layouts:
        return
    answers = [m for m in wire if isinstance(m, dict) and m.get("role") == "assistant"]
    runs = _assistant_runs(rendered)
    if len(runs) != len(answers):
        return
    for run, sent in zip(runs, answers, strict=True):
        _lay_out(run, sent, layouts)


def _lay_out(
    run: Sequence[int],
    sent: dict[str, Any],
    layouts: Mapping[int, tuple[tuple[str, ...], list[dict[str, Any]]]],
) -> None:
    """One Anthropic-body assistant message (`run`: the rendered messages it was made of) with
    its blocks where they stood, when its one rendered message has a layout and lines up."""
    found = layouts.get(run[0]) if len(run) == 1 else None
    content = sent.get("content")
    if found is not None and isinstance(content, list):
        laid_out = apply_layout(content, *found)
        if laid_out is not None:
            sent["content"] = laid_out


def _wanted_keys(keys: Mapping[int, str], legacy: Mapping[int, str] | None) -> list[str]:
    return sorted({*keys.values(), *(legacy.values() if legacy else ())})


def _placeholders_for_restored(state: CallState, body: Any) -> bool:
    """A Gemini body, sent again for a call into which signed records were restored, in which
    LiteLLM replaced those signatures by its skip-validator placeholder (none of ours is left,
    a placeholder is there)."""
    if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
        return False
    ours = {
        signature_bytes(value)
        for record in state.restored_records().values()
        for part in record.parts
        for value in (part.signature, part.data)
        if value
    }
    if not ours:
        return False
    sent: list[str] = [
        part["thoughtSignature"]
        for content in body["contents"]
        if isinstance(content, dict)
        for part in content.get("parts") or ()
        if isinstance(part, dict) and isinstance(part.get("thoughtSignature"), str)
    ]
    if any(signature_bytes(value) in ours for value in sent):
        return False
    return LITELLM_PLACEHOLDER_SIGNATURE in sent


LITELLM_PLACEHOLDER_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode()
"""What LiteLLM puts in place of a thought signature it does not want validated."""


def _messages_keeps(policy: TurnPolicy, index: int, turn_start: int, message: Any) -> bool:
    """Whether an Anthropic-format assistant message carries its reasoning under `policy`:
    the current turn always (Claude's tool loop needs it), earlier turns as the policy says."""
    if index > turn_start:
        return True
    if policy is TurnPolicy.ALL_TURNS:
        return True
    if policy is TurnPolicy.TOOL_CALLS_ALL_TURNS:
        content = message.get("content")
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_use" for b in content
        )
    return False


def _readable_parts(record: Reasoning) -> Reasoning | None:
    """`record` without what only its issuer can read (signatures, encrypted and redacted
    data); None when nothing else is left."""
    parts = tuple(
        dataclasses.replace(part, signature=None)
        for part in record.parts
        if not part.data and part.text
    )
    if not parts:
        return None
    return dataclasses.replace(record, parts=parts, layout=(), origin=None)


_CREDENTIALS = (
    "api_key",
    "organization",
    "vertex_project",
    "vertex_credentials",
    "aws_access_key_id",
    "aws_role_name",
    "aws_profile_name",
    "aws_bedrock_runtime_endpoint",
)
"""What tells one organisation, account or project apart among a provider's deployments."""


def _origin(kwargs: Mapping[str, Any], provider: str | None) -> tuple[str, str | None]:
    """(`identity.origin_of` the deployment a call goes to, its Router id), from what the
    caller or the Router deployment gave: on the sync path LiteLLM's logging details also
    hold resolved values at the top level (an env key), so `litellm_params` (as given) wins,
    and both paths fingerprint a deployment alike."""
    params = kwargs.get("litellm_params")
    params = params if isinstance(params, dict) else {}
    details = "additional_args" in kwargs

    def given(name: str) -> Any:
        if name in params:
            return params.get(name)
        return None if details else kwargs.get(name)

    info = given("model_info")
    deployment = info.get("id") if isinstance(info, dict) else None
    credentials = [given(name) for name in _CREDENTIALS]
    # Not the endpoint: LiteLLM's logging details hold the resolved URL where the deployment
    # hook has none, and an endpoint does not tell organisations apart, its credential does.
    origin = identity.origin_of(provider, credentials)
    return origin, str(deployment) if deployment is not None else None


def _stored_records(
    keys: Mapping[int, str], legacy: Mapping[int, str], found: Mapping[str, Reasoning]
) -> dict[int, Reasoning]:
    """Message index -> its record: under its own key, else one the previous release wrote
    under its legacy key (never this release's superseded copy there)."""
    stored = {i: found[key] for i, key in keys.items() if key in found}
    for i, key in legacy.items():
        record = found.get(key)
        if i not in stored and record is not None and not record.superseded:
            stored[i] = record
    return stored


def _primary(records: Mapping[str, Reasoning]) -> int:
    return sum(not record.superseded for record in records.values())


def _raw_claude_reply(capture: Capture, source: Any) -> dict[str, Any] | None:
    """A Claude reply's raw JSON body, as LiteLLM keeps it in its logging details (None: not
    Claude, streamed, or not JSON). Parsed once per capture."""
    if capture.provider not in CLAUDE_PROVIDERS or not isinstance(source, dict):
        return None
    raw = source.get("original_response")
    if not isinstance(raw, str | bytes) or not raw:
        return None
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _reply_layout(
    capture: Capture, state: CallState, source: Any, raw: dict[str, Any] | None
) -> tuple[str, ...]:
    """Where Claude's blocks stood in the reply (`anthropic.layout_of_*`): from the stream's
    chunks, or from the raw body (`_raw_claude_reply`). Empty when unknown."""
    if capture.provider not in CLAUDE_PROVIDERS:
        return ()
    chunks = source if isinstance(source, list) else None
    if chunks is None and state.stream is not None:
        wrapper = state.stream()
        chunks = list(getattr(wrapper, "chunks", None) or ()) if wrapper is not None else None
    if chunks is not None:
        return layout_of_deltas(
            choices[0].delta
            for chunk in chunks
            if (choices := getattr(chunk, "choices", None)) and getattr(choices[0], "delta", None)
        )
    if raw is None:
        return ()
    content = raw.get("content")
    if content is None:  # Bedrock Converse
        content = ((raw.get("output") or {}).get("message") or {}).get("content")
    return layout_of_blocks(content) if isinstance(content, list) else ()


def _input_transformations(response: Any, raw: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A Claude reply's top-level `input_transformations`: LiteLLM 1.110 moves them onto the
    message's `provider_specific_fields`; 1.106 leaves them in the raw body only."""
    choices = getattr(response, "choices", None) or ()
    message = getattr(choices[0], "message", None) if choices else None
    psf = getattr(message, "provider_specific_fields", None)
    found = psf.get("input_transformations") if isinstance(psf, dict) else None
    if found is None and raw is not None:
        found = raw.get("input_transformations")
    if not isinstance(found, list):
        return []
    # Scalars only (reason, kind, indices): a transformed block's own text or signature must
    # not reach logs or spend-log metadata.
    return [
        {
            k: v
            for k, v in t.items()
            if isinstance(v, str | int | float | bool) and k not in _SECRET_FIELDS
        }
        for t in found
        if isinstance(t, Mapping)
    ]


_SECRET_FIELDS = frozenset({"thinking", "signature", "data", "text", "encrypted_content"})


def _finishes(chunk: Any) -> bool:
    """A stream chunk carrying the provider's finish."""
    return any(
        getattr(choice, "finish_reason", None) is not None
        for choice in getattr(chunk, "choices", None) or ()
    )


def _stream_finished(wrapper: Any) -> bool:
    """The provider sent its finish on this LiteLLM stream (each provider path of LiteLLM's
    stream wrapper records it in one of these)."""
    for name in (
        "received_finish_reason",
        "intermittent_finish_reason",
        "received_any_finish_reason",
    ):
        if getattr(wrapper, name, None):
            return True
    return any(map(_finishes, getattr(wrapper, "chunks", None) or ()))


def _may_capture(state: CallState, response: Any) -> bool:
    """A streamed reply is kept only when its provider finished it; a stream LiteLLM no
    longer holds cannot be asked (kept, as before the stream was watched)."""
    capture = state.capture
    if capture is None or capture.responses_input or capture.bridged:
        return True  # Responses replies are complete at `response.completed`
    if _responses_output(response) is not None:
        return True
    wrapper = state.stream() if state.stream is not None else None
    return wrapper is None or _stream_finished(wrapper)


def _patch_assistants(wire: Any, rendered: Sequence[Any], dialect: Any) -> list[Any]:
    """The provider body's messages with each assistant message patched by `dialect` from the
    rendered one in the same place among assistant messages (providers may add a system
    message or drop empty ones, so only assistant messages are lined up)."""
    if not isinstance(wire, list):
        raise TypeError("the provider body has no message list")
    wire = _without_turn(wire)
    sent = [i for i, m in enumerate(wire) if isinstance(m, dict) and m.get("role") == "assistant"]
    want = [m for m in rendered if isinstance(m, dict) and m.get("role") == "assistant"]
    if len(sent) != len(want):
        raise RuntimeError("the provider body's assistant messages do not line up")
    out = list(wire)
    for index, message in zip(sent, want, strict=True):
        out[index] = dialect.patch_wire(wire[index], message)
    return out


def _deployment(kwargs: Mapping[str, Any]) -> tuple[str | None, str, str | None, list[str]]:
    """The deployment a call hits: LiteLLM provider, model without its provider prefix,
    api_base, and the names overrides may match (`provider/model`, the model as given, the
    Router / proxy model group)."""
    params = kwargs.get("litellm_params")
    params = params if isinstance(params, dict) else {}
    model = str(kwargs.get("model") or "")
    api_base = kwargs.get("api_base") or params.get("api_base")
    provider = kwargs.get("custom_llm_provider") or params.get("custom_llm_provider")
    bare = model
    if provider and model.startswith(f"{provider}/"):
        bare = model[len(provider) + 1 :]
    elif not provider:
        # No provider LiteLLM knows: rendered as passthrough.
        with contextlib.suppress(Exception):
            bare, provider, _, _ = get_llm_provider(model=model, api_base=api_base)
    names = [f"{provider}/{bare}", model]
    # Chat calls carry the Router / proxy model group in `metadata`, Responses calls in
    # `litellm_metadata`.
    for key in ("metadata", "litellm_metadata"):
        metadata = kwargs.get(key)
        if isinstance(metadata, dict) and metadata.get("model_group"):
            names.append(str(metadata["model_group"]))
    return provider, bare, api_base, names


def _attach_summary(litellm_params: dict[str, Any], summary: dict[str, Any]) -> None:
    """`summary` under `metadata.spend_logs_metadata`: the one metadata key LiteLLM copies into
    the StandardLoggingPayload (and the proxy into its spend logs) that callers may extend."""
    metadata = litellm_params.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    spend = with_summary(metadata, summary)
    if spend is not None:
        # A new dict: `metadata` may be the very dict the caller passed to LiteLLM.
        litellm_params["metadata"] = {**metadata, "spend_logs_metadata": spend}


def _gemini_contents(
    messages: list[Any], model: str, kwargs: Any, dialect: GeminiDialect, body: dict[str, Any]
) -> list[Any]:
    """Gemini `contents` for `messages`, as LiteLLM builds them (system messages go to
    `system_instruction` when the body has one, as in LiteLLM's own request transformation)."""
    import copy

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


class _Output:
    """A Responses reply's output items, as `_records` reads them."""

    def __init__(self, output: list[dict[str, Any]]) -> None:
        self.output = output


class _OneMessage:
    """One assistant message, as `_records` reads a chat reply."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.choices = [type("_Choice", (), {"message": message})()]


def _responses_output(response: Any) -> list[dict[str, Any]] | None:
    """The output items of a Responses reply (None: not one)."""
    if response is None or getattr(response, "choices", None):
        return None
    output = getattr(response, "output", None)
    if not isinstance(output, list):
        return None
    return [item for item in map(_as_dict, output) if item is not None]


def _request_param(kwargs: Mapping[str, Any], name: str) -> Any:
    """A request parameter given directly or in `extra_body`."""
    if name in kwargs:
        return kwargs[name]
    extra = kwargs.get("extra_body")
    return extra.get(name) if isinstance(extra, dict) else None


def _ask_for_encrypted_content(
    kwargs: dict[str, Any], target: Target, model: str | None = None
) -> None:
    """Add `reasoning.encrypted_content` to `include` (where the caller put theirs), for
    reasoning models only: other models reject it."""
    if target.policy is TurnPolicy.NONE:
        return
    name = model if model is not None else str(kwargs.get("model") or "")
    asked = _request_param(kwargs, "reasoning") or _request_param(kwargs, "reasoning_effort")
    if not (is_reasoning_model(name) or asked):
        return
    extra = kwargs.get("extra_body")
    if isinstance(extra, dict) and "include" in extra:
        extra["include"] = with_encrypted_include(extra["include"])
    else:
        kwargs["include"] = with_encrypted_include(kwargs.get("include"))


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
