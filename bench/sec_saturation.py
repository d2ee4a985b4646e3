"""Saturation: the real proxy with 4 workers, default store settings, 64 agents at once, each
running its own 40-step tool loop from a client that drops reasoning, against upstreams that
refuse a tool-call message without its `reasoning_content` the way Kimi and DeepSeek do.

Every call the callback lets go out without the reasoning it needs fails with the provider's
400; this section counts those (the goal is none), the assistant messages that reached the
upstream without their reasoning, and the store outages the proxy logged, once with Redis and
once with SQLite (the proxy's default store)."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from common import TOOLS, Section, fmt_ms, median, percentile, verdict
from proxy_proc import Proxy, ProxyProcess, proxies
from sec_workers import REPLY_SHARED_ID
from upstream_proc import upstream_process

REDIS = "redis://127.0.0.1:6379/0"

MODELS = {"kimi": "kimi-k2-thinking", "deepseek": "deepseek-v4-flash"}
"""Model group -> upstream model; the upstream refuses each by its provider's rule."""
DEPLOYMENTS = {"kimi": "moonshot/kimi-k2-thinking", "deepseek": "deepseek/deepseek-v4-flash"}


async def _agents(proxy: Proxy, agents: int, steps: int) -> dict[str, Any]:
    """`agents` loops at once, half on each model group; a new connection per request (any
    worker answers). A refused step is counted and sent again (as an agent retries)."""
    headers = {"authorization": f"Bearer {proxy.master_key}", "content-type": "application/json"}
    limits = httpx.Limits(max_keepalive_connections=0)
    latencies: list[float] = []
    failed = other = 0
    async with httpx.AsyncClient(limits=limits, timeout=300.0, trust_env=False) as client:

        async def agent(n: int) -> None:
            nonlocal failed, other
            group = "kimi" if n % 2 else "deepseek"
            history: list[dict[str, Any]] = [
                {"role": "system", "content": f"You are coding agent {n}. Use the tools."},
                {"role": "user", "content": f"Fix the failing parser test ({uuid.uuid4()})."},
            ]
            for step in range(steps):
                body = json.dumps({"model": group, "messages": history, "tools": TOOLS})
                start = time.perf_counter()
                response = await client.post(
                    proxy.url + "/v1/chat/completions", content=body, headers=headers
                )
                latencies.append(time.perf_counter() - start)
                if response.status_code == 400:
                    failed += 1
                    continue
                if response.status_code != 200:
                    other += 1
                    continue
                message = response.json()["choices"][0]["message"]
                calls = message["tool_calls"]
                history += [
                    {"role": "assistant", "content": message.get("content"), "tool_calls": calls},
                    {"role": "tool", "tool_call_id": calls[0]["id"], "content": f"step {step}"},
                ]

        await asyncio.gather(*(agent(n) for n in range(agents)))
    return {"latencies": latencies, "failed": failed, "other": other}


def _outages(log: Path) -> int:
    text = log.read_text(errors="replace")
    return text.count("unavailable while")


def _arm(store: str, url: str, workers: int, agents: int, steps: int) -> dict[str, Any]:
    tally: dict[str, int] = {}
    with (
        upstream_process(
            dict.fromkeys(MODELS.values(), REPLY_SHARED_ID),
            strict={MODELS["kimi"]: "kimi", MODELS["deepseek"]: "deepseek"},
            tally=tally,
        ) as base_url,
        tempfile.TemporaryDirectory(prefix="bench-saturation-") as tmp,
    ):
        model_list = [
            {
                "model_name": group,
                "litellm_params": {"model": model, "api_base": base_url, "api_key": "x"},
            }
            for group, model in DEPLOYMENTS.items()
        ]
        spec = ProxyProcess(
            {
                "model_list": model_list,
                "litellm_settings": {"callbacks": "litellm_reasoning.callback"},
            },
            Path(tmp) / store,
            env={"LITELLM_REASONING_STORE": url},
            num_workers=workers,
        )
        with proxies({store: spec}, timeout=600.0) as running:
            proxy = running[store]
            cpu = proxy.group_cpu_seconds()
            start = time.perf_counter()
            result = asyncio.run(_agents(proxy, agents, steps))
            result["elapsed"] = time.perf_counter() - start
            result["cpu"] = proxy.group_cpu_seconds() - cpu
            result["outages"] = _outages(proxy.log_path)
    result["tally"] = tally
    print(f"  saturation {store}: {result['failed']} failed, tally {tally}", flush=True)
    return result


def run(workers: int, agents: int, steps: int, stores: list[str] | None = None) -> Section:
    section = Section(
        "saturation",
        f"Saturation: {agents} agents at once on {workers} workers, strict upstreams",
    )
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    arms: dict[str, str] = {}
    try:
        import redis

        redis.Redis.from_url(REDIS).ping()
        arms["redis"] = f"{REDIS}?prefix={prefix}"
    except Exception as exc:
        section.note(f"Redis arm skipped: no Redis at {REDIS} ({type(exc).__name__})")
    with tempfile.TemporaryDirectory(prefix="bench-saturation-db-") as db:
        arms["sqlite"] = f"sqlite:///{db}/reasoning.db"
        results = {
            name: _arm(name, url, workers, agents, steps)
            for name, url in arms.items()
            if stores is None or name in stores
        }
    if "redis" in arms:
        import redis

        client = redis.Redis.from_url(REDIS)
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
    rows = []
    for name, r in results.items():
        t = r["tally"]
        lost = t.get("assistant", 0) - t.get("carried", 0)
        rows.append(
            [
                name,
                str(t.get("requests", 0)),
                str(r["failed"]),
                str(r["other"]),
                f"{lost} of {t.get('assistant', 0)}",
                str(r["outages"]),
                fmt_ms(median(r["latencies"])),
                fmt_ms(percentile(r["latencies"], 99)),
                fmt_ms(r["cpu"] / max(t.get("requests", 1), 1)),
            ]
        )
        section.summary += [
            (
                f"saturation ({agents} agents, {workers} workers, {name}): calls failed",
                str(r["failed"] + r["other"]),
                "0",
                verdict(r["failed"] + r["other"] == 0),
            ),
            (
                f"saturation ({name}): assistant messages sent without their reasoning",
                f"{lost} of {t.get('assistant', 0)}",
                "0",
                verdict(lost == 0 and t.get("assistant", 0) > 0),
            ),
        ]
    section.table(
        [
            "store",
            "requests",
            "refused (400)",
            "other errors",
            "assistant messages without reasoning",
            "outages logged",
            "p50",
            "p99",
            "CPU / request",
        ],
        rows,
    )
    section.note(
        f"{agents} agents at once (half on a Kimi-like, half on a DeepSeek-like upstream that "
        f"refuses a tool-call message without `reasoning_content` with the provider's text), "
        f"each a {steps}-step tool loop from a client that drops reasoning, a new connection "
        f"per request; the proxy with {workers} workers and the store at its default settings. "
        "A refused step is sent again. The upstream counts every request it received, refused "
        "or not."
    )
    return section
