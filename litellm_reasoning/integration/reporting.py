"""What the callback tells the operator, in one place: the `stats` counter, Prometheus, the
per-request decisions summary in LiteLLM's spend-log metadata, and its warnings (one per kind
of failure and per minute; the rest go to DEBUG)."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from typing import Any

from ..core.decisions import with_summary
from ..core.healing import Refusal
from ..core.policy import TurnPolicy
from ..core.render import Rendered
from ..core.usage import PromptCache
from . import metrics
from .calls import CallState, RenderedFor

logger = logging.getLogger("litellm_reasoning")


class Reporter:
    """The stats, warnings and decisions of one callback instance."""

    def __init__(self) -> None:
        self.stats: Counter[str] = Counter()
        """What the callback did: restored, stripped, captured, missing, waited, errors."""
        self._warned: dict[str, float] = {}

    def fail(self, where: str, exc: BaseException) -> None:
        """Something inside the callback failed; the request goes through as the client sent
        it (less `turn`)."""
        self.stats["errors"] += 1
        if self.first_this_minute(where):
            logger.warning(
                "litellm-reasoning: %s failed (%s: %s); the request goes through unchanged "
                "except for `turn`",
                where,
                type(exc).__name__,
                exc,
            )
        else:
            logger.debug("litellm-reasoning: %s failed again", where, exc_info=exc)

    def first_this_minute(self, where: str) -> bool:
        """One warning per `where` per minute; the rest go to DEBUG."""
        now = time.monotonic()
        if now - self._warned.get(where, -1e9) < 60.0:
            return False
        self._warned[where] = now
        return True

    def rendered(self, rendered: Rendered, dialect: str) -> None:
        """Count one rendered request (the decisions line is `decide`'s, after the limits)."""
        self.stats["restored"] += len(rendered.restored)
        self.stats["reordered"] += len(rendered.reordered)
        self.stats["stripped"] += len(rendered.stripped)
        self.stats["missing"] += len(rendered.missing)
        self.stats["dropped"] += len(rendered.dropped)
        if rendered.dropped:
            logger.debug(
                "litellm-reasoning: %s cannot take the reasoning of messages %s (signed by "
                "another issuer, or unsigned): left out",
                dialect,
                rendered.dropped,
            )

    def decide(self, summary: dict[str, Any]) -> dict[str, Any]:
        """Make one request's decisions visible: Prometheus, one DEBUG line, and (by
        `attach_decisions`, once the call's state holds the summary returned)
        LiteLLM's logging metadata (`spend_logs_metadata.litellm_reasoning`)."""
        metrics.record(summary)
        self.stats["reasoning_tokens_sent"] += summary["reasoning_tokens"]["sent"]
        self.stats["reasoning_tokens_saved"] += summary["reasoning_tokens"]["saved"]
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("litellm-reasoning decisions: %s", json.dumps(summary, sort_keys=True))
        return summary

    @staticmethod
    def attach_decisions(kwargs: Any, state: CallState) -> None:
        """Put the rendered call's summary on LiteLLM's logging metadata: the sync path's
        logging details once rendered; async paths by `log_pre_api_call`, where it exists (the
        deployment hook's `metadata` is not that dict)."""
        summary, state.summary = state.summary, None
        params = kwargs.get("litellm_params")
        if summary is not None and isinstance(params, dict):
            attach_summary(params, summary)
            state.reported = summary

    def prompt_cache(self, state: CallState, cache: PromptCache | None) -> None:
        """One reply's input tokens by how the provider's prompt cache served them: the stats,
        Prometheus, and `prompt_cache` in the call's decisions summary (the same dict LiteLLM's
        logging metadata holds: loggers that read it after the reply see it)."""
        if cache is None:
            return
        self.stats["cache_read_tokens"] += cache.read
        self.stats["cache_write_tokens"] += cache.write
        self.stats["uncached_prompt_tokens"] += cache.uncached
        target = state.rendered_for
        tokens = cache.as_dict()
        metrics.record_prompt_cache(
            target.dialect.name if target is not None else "unknown", tokens
        )
        summary = state.reported if isinstance(state.reported, dict) else state.summary
        if isinstance(summary, dict):
            summary["prompt_cache"] = tokens
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("litellm-reasoning prompt cache: %s", json.dumps(tokens))

    def thinking_turned_off(self, dialect: str) -> None:
        self.stats["thinking_disabled"] += 1
        logger.warning(
            "litellm-reasoning: thinking turned off for this %s call: the tool calls it answers "
            "have no thinking block this target accepts (another provider's reply, or no "
            "stored record), and the provider rejects a tool loop with thinking on without one",
            dialect,
        )

    def thinking_cannot_go_off(self, dialect: str, model: str) -> None:
        self.stats["thinking_stays_on"] += 1
        logger.warning(
            "litellm-reasoning: the %s call to %s answers tool calls with no thinking block it "
            "accepts, and this model's thinking cannot be turned off: sent as the client sent "
            "it (the provider may refuse it as it would without this callback)",
            dialect,
            model,
        )

    def refusal(
        self, target: RenderedFor, refusal: Refusal, evicted: int, policy: TurnPolicy | None
    ) -> None:
        self.stats["refusals_healed"] += 1
        if evicted:
            self.stats["refused_records"] += evicted
        metrics.record_refusal(target.dialect.name, refusal.value)
        if not self.first_this_minute(f"refusal:{target.dialect.name}:{refusal.value}"):
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


def attach_summary(litellm_params: dict[str, Any], summary: dict[str, Any]) -> None:
    """`summary` under `metadata.spend_logs_metadata`: the one metadata key LiteLLM copies into
    the StandardLoggingPayload (and the proxy into its spend logs) that callers may extend."""
    metadata = litellm_params.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    spend = with_summary(metadata, summary)
    if spend is not None:
        # A new dict: `metadata` may be the very dict the caller passed to LiteLLM.
        litellm_params["metadata"] = {**metadata, "spend_logs_metadata": spend}
