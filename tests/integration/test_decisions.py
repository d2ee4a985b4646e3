"""Every request's decisions are visible: in the StandardLoggingPayload LiteLLM hands its logging
integrations (`metadata.spend_logs_metadata.litellm_reasoning`), in one DEBUG line, and in
Prometheus counters (the proxy's `/metrics`).

The history: a Qwen (dashscope, current_turn) conversation whose client kept its reasoning; the
earlier turn's two messages are stripped, the current turn's tool call is kept (provider rules
§11, the Qwen3 template drops reasoning before the last user query).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import textwrap
import time
import uuid
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from conftest import register
from litellm.integrations.custom_logger import CustomLogger

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.decisions import METADATA_KEY
from litellm_reasoning.testing.upstream import Reply, Upstream

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "one"},
    {"role": "assistant", "content": "", "reasoning_content": "call f", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "r"},
    {"role": "assistant", "content": "done", "reasoning_content": "the answer is r"},
    {"role": "user", "content": "two"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "now call f again",
        "tool_calls": [{**CALL, "id": "c2"}],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "r"},
]


def _tokens(text: str) -> int:
    """The documented estimate: characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


EXPECTED = {
    "policy": "current_turn",
    "dialect": "openai_chat",
    "messages": {"1": "stripped", "3": "stripped", "5": "kept"},
    "reasoning_tokens": {
        "sent": _tokens("now call f again"),
        "saved": _tokens("call f") + _tokens("the answer is r"),
    },
}


class Collector(CustomLogger):
    """A logging integration: keeps the StandardLoggingPayload metadata of each success."""

    def __init__(self) -> None:
        super().__init__()
        self.instance_id = uuid.uuid4().hex  # LiteLLM keeps one instance per class and fields
        self._by_call: dict[Any, tuple[str, dict[str, Any]]] = {}

    def of(self, model: str) -> list[dict[str, Any]]:
        """The metadata of each call to `model`, once per call: LiteLLM's logging worker may
        still deliver earlier tests' events, and a call's success may reach both methods."""
        return [meta for name, meta in self._by_call.values() if model in name]

    def _keep(self, kwargs: Any) -> None:
        payload = kwargs.get("standard_logging_object") or {}
        call = payload.get("id") or kwargs.get("litellm_call_id") or len(self._by_call)
        model = str(payload.get("model") or kwargs.get("model") or "")
        self._by_call[call] = (model, dict(payload.get("metadata") or {}))

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._keep(kwargs)

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._keep(kwargs)


@pytest.fixture
def collector() -> Iterator[Collector]:
    cb = ReasoningCallback()
    register(cb)
    collector = Collector()
    litellm.callbacks = [cb, collector]
    yield collector
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = []


def _check(summary: dict[str, Any]) -> None:
    for key, value in EXPECTED.items():
        assert summary[key] == value, key
    assert summary["counts"]["stripped"] == 2
    assert summary["counts"]["kept"] == 1


async def _call(
    how: str, upstream: Upstream, model: str, stream: bool, metadata: dict[str, Any] | None = None
) -> None:
    params: dict[str, Any] = {
        "messages": [dict(m) for m in HISTORY],
        "stream": stream,
        "metadata": metadata if metadata is not None else {"spend_logs_metadata": {"team": "s"}},
    }
    target: Any = litellm
    if how.startswith("router."):
        target = litellm.Router(
            model_list=[
                {
                    "model_name": "group",
                    "litellm_params": {
                        "model": f"dashscope/{model}",
                        "api_base": upstream.base_url,
                        "api_key": "k",
                    },
                }
            ],
            num_retries=0,
        )
        params["model"] = "group"
    else:
        params.update(model=f"dashscope/{model}", api_base=upstream.base_url, api_key="k")
    if how.endswith("acompletion"):
        response = await target.acompletion(**params)
        if stream:
            async for _ in response:
                pass
    else:

        def run() -> None:
            response = target.completion(**params)
            if stream:
                for _ in response:
                    pass

        await asyncio.to_thread(run)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", ["acompletion", "completion", "router.acompletion"])
async def test_summary_reaches_the_standard_logging_payload(
    how: str, stream: bool, upstream: Upstream, collector: Collector
) -> None:
    model = f"dec-{uuid.uuid4().hex[:6]}"
    upstream.script(model, Reply(message={"content": "ok"}))
    callers_spend = {"team": "search"}
    callers_metadata: dict[str, Any] = {"spend_logs_metadata": callers_spend}
    await _call(how, upstream, model, stream, callers_metadata)
    for _ in range(100):  # success events run after the call returns
        if collector.of(model):
            break
        await asyncio.sleep(0.05)
    (metadata,) = collector.of(model)
    spend = metadata["spend_logs_metadata"]
    assert spend["team"] == "search"  # the caller's own keys stay
    # ... and the caller's own dicts are not written to (LiteLLM may add its own keys)
    assert callers_spend == {"team": "search"}
    assert callers_metadata["spend_logs_metadata"] is callers_spend
    _check(spend[METADATA_KEY])
    # and the wire agrees with the summary
    (body,) = upstream.bodies(model)
    sent = [bool(m.get("reasoning_content")) for m in body["messages"] if m["role"] == "assistant"]
    assert sent == [False, False, True]


async def test_one_debug_line_per_request(
    upstream: Upstream, collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    model = f"dec-{uuid.uuid4().hex[:6]}"
    upstream.script(model, Reply(message={"content": "ok"}), Reply(message={"content": "ok"}))
    with caplog.at_level(logging.DEBUG, logger="litellm_reasoning"):
        await _call("acompletion", upstream, model, False)
        await _call("acompletion", upstream, model, False)
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "litellm_reasoning" and "decisions:" in r.getMessage()
    ]
    assert len(lines) == 2
    _check(json.loads(lines[0].split("decisions: ", 1)[1]))
    # reasoning text itself is never logged
    assert "the answer is r" not in caplog.text


async def test_prometheus_counters(upstream: Upstream, collector: Collector) -> None:
    prometheus = pytest.importorskip("prometheus_client")
    registry = prometheus.REGISTRY
    labels = {"dialect": "openai_chat", "policy": "current_turn"}

    def value(name: str, **extra: str) -> float:
        return registry.get_sample_value(name, {**labels, **extra}) or 0.0

    before = {
        "requests": value("litellm_reasoning_requests_total"),
        "stripped": value("litellm_reasoning_messages_total", decision="stripped"),
        "kept": value("litellm_reasoning_messages_total", decision="kept"),
        "saved": value("litellm_reasoning_tokens_total", kind="saved"),
        "sent": value("litellm_reasoning_tokens_total", kind="sent"),
    }
    model = f"dec-{uuid.uuid4().hex[:6]}"
    upstream.script(model, Reply(message={"content": "ok"}))
    await _call("acompletion", upstream, model, False)
    assert value("litellm_reasoning_requests_total") == before["requests"] + 1
    assert value("litellm_reasoning_messages_total", decision="stripped") == before["stripped"] + 2
    assert value("litellm_reasoning_messages_total", decision="kept") == before["kept"] + 1
    tokens = EXPECTED["reasoning_tokens"]
    assert isinstance(tokens, dict)
    assert (
        value("litellm_reasoning_tokens_total", kind="saved") == before["saved"] + tokens["saved"]
    )
    assert value("litellm_reasoning_tokens_total", kind="sent") == before["sent"] + tokens["sent"]
    exposition = prometheus.generate_latest(registry).decode()
    assert "litellm_reasoning_messages_total{" in exposition


def test_no_prometheus_client_is_a_quiet_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from litellm_reasoning.integration import metrics

    real_import = builtins.__import__

    def no_prometheus(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("prometheus_client"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_prometheus)
    monkeypatch.setattr(metrics, "_COUNTERS", None)
    monkeypatch.setattr(metrics, "_UNAVAILABLE", False)
    assert not metrics.available()
    metrics.record(
        {
            "dialect": "d",
            "policy": "p",
            "counts": {"kept": 1},
            "reasoning_tokens": {"sent": 1, "saved": 0},
        }
    )


# ------------------------------------------------------------------ the real proxy

PROBE = textwrap.dedent(
    """
    import json, os
    from litellm.integrations.custom_logger import CustomLogger

    class Probe(CustomLogger):
        async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
            metadata = (kwargs.get("standard_logging_object") or {}).get("metadata") or {}
            with open(os.environ["DECISIONS_PROBE_OUT"], "a") as out:
                out.write(json.dumps(metadata.get("spend_logs_metadata"), default=str) + "\\n")

    probe = Probe()
    """
)


@pytest.mark.proxy
def test_proxy_logs_and_metrics_show_the_decisions(
    upstream: Upstream, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The real proxy with `callbacks: [litellm_reasoning.callback, prometheus, probe]`: the
    probe integration sees the summary in the StandardLoggingPayload, and `/metrics` lists the
    counters."""
    pytest.importorskip("prometheus_client")
    import urllib.request

    import openai
    from proxy_utils import proxy_config, run_proxy

    workdir = tmp_path_factory.mktemp("decisions-proxy")
    (workdir / "decisions_probe.py").write_text(PROBE)
    out = workdir / "probe.jsonl"
    model = f"dec-proxy-{uuid.uuid4().hex[:6]}"
    upstream.script(model, Reply(message={"content": "ok"}))
    deployment = {
        "model_name": "qwen",
        "litellm_params": {
            "model": f"dashscope/{model}",
            "api_base": upstream.base_url,
            "api_key": "x",
        },
    }
    config = proxy_config(
        [deployment],
        callbacks=["litellm_reasoning.callback", "prometheus", "decisions_probe.probe"],
    )
    with run_proxy(config, workdir, env={"DECISIONS_PROBE_OUT": str(out)}) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key=proxy.master_key)
        client.chat.completions.create(model="qwen", messages=HISTORY)  # type: ignore[arg-type]
        lines: list[str] = []
        for _ in range(100):  # the success event runs after the reply is sent
            lines = out.read_text().splitlines() if out.exists() else []
            if lines:
                break
            time.sleep(0.1)
        request = urllib.request.Request(
            proxy.url + "/metrics", headers={"Authorization": f"Bearer {proxy.master_key}"}
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=10) as response:
            exposition = response.read().decode()
    assert lines, "the probe integration saw no success event"
    _check(json.loads(lines[0])[METADATA_KEY])
    assert (
        'litellm_reasoning_messages_total{decision="stripped",dialect="openai_chat",'
        'policy="current_turn"} 2.0'
    ) in exposition


# ------------------------------------------------------------------ the provider's prompt cache

# Recorded usage (shared/realdata/vercel-ai/deepseek/deepseek-tool-call.chunks.txt).
DEEPSEEK_USAGE = {
    "prompt_tokens": 339,
    "completion_tokens": 83,
    "total_tokens": 422,
    "prompt_tokens_details": {"cached_tokens": 320},
    "completion_tokens_details": {"reasoning_tokens": 39},
    "prompt_cache_hit_tokens": 320,
    "prompt_cache_miss_tokens": 19,
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", ["acompletion", "completion", "router.acompletion"])
async def test_the_replys_prompt_cache_is_counted_and_summarised(
    how: str, stream: bool, upstream: Upstream, collector: Collector
) -> None:
    """The cached input tokens the provider reports: in the stats, in Prometheus and in the
    request's decisions summary (what a policy costs the prompt cache is visible per request)."""
    prometheus = pytest.importorskip("prometheus_client")
    callback = next(cb for cb in litellm.callbacks if isinstance(cb, ReasoningCallback))

    def value(kind: str) -> float:
        labels = {"dialect": "openai_chat", "kind": kind}
        return (
            prometheus.REGISTRY.get_sample_value("litellm_reasoning_prompt_tokens_total", labels)
            or 0.0
        )

    before = {kind: value(kind) for kind in ("cache_read", "uncached")}
    model = f"dec-{uuid.uuid4().hex[:6]}"
    upstream.script(model, Reply(message={"content": "ok"}, usage=DEEPSEEK_USAGE))
    await _call(how, upstream, model, stream)
    for _ in range(100):  # success events run after the call returns
        if collector.of(model) and callback.stats["cache_read_tokens"]:
            break
        await asyncio.sleep(0.05)
    assert callback.stats["cache_read_tokens"] == 320
    assert callback.stats["uncached_prompt_tokens"] == 19
    assert callback.stats["cache_write_tokens"] == 0
    assert value("cache_read") == before["cache_read"] + 320
    assert value("uncached") == before["uncached"] + 19
    if how.endswith("acompletion") and not stream:
        # Known before LiteLLM builds its logging payload only where the reply is read in the
        # deployment hook (async, not streamed): there the loggers see it too.
        (metadata,) = collector.of(model)
        summary = metadata["spend_logs_metadata"][METADATA_KEY]
        assert summary["prompt_cache"] == {"cache_read": 320, "cache_write": 0, "uncached": 19}
