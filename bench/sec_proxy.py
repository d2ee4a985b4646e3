"""Proxy throughput: the real LiteLLM proxy with and without the callback, in front of a local
server in its own process, under N concurrent clients."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from common import Section, deepseek_recording, fmt_ms, fmt_ratio, median, percentile, verdict
from proxy_proc import ProxyProcess, proxies
from upstream_proc import upstream_process


def _reply(raw: str) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(raw)["choices"][0]["message"]
    return message


def _dropped(message: dict[str, Any]) -> dict[str, Any]:
    """What a reasoning-dropping client keeps of a message."""
    return {k: v for k, v in message.items() if k not in ("reasoning_content", "reasoning")}


def _conversation() -> tuple[dict[str, dict[str, Any]], list[tuple[str, list[Any]]], list[Any]]:
    """The recorded DeepSeek tool loop: the upstream's replies per model name, the warm-up
    requests that get its two tool-call replies captured, and the steady-state request (both
    tool-call messages to restore, reasoning dropped by the client)."""
    data = deepseek_recording()
    replies = [_reply(r) for r in data["responses"]]
    requests = [[_dropped(m) for m in r["messages"]] for r in data["requests"]]
    always = {"bench-warm1": replies[0], "bench-warm2": replies[1], "bench-steady": replies[2]}
    warm = [("bench-warm1", requests[0]), ("bench-warm2", requests[1])]
    return always, warm, requests[2]


async def _load(
    url: str, headers: dict[str, str], body: dict[str, Any], concurrency: int, seconds: float
) -> tuple[int, int, list[float], float]:
    """`concurrency` clients, each sending `body` back to back for `seconds`.
    Returns (ok, errors, latencies, elapsed)."""
    latencies: list[float] = []
    errors = 0
    payload = json.dumps(body).encode()
    headers = {**headers, "content-type": "application/json"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30.0, trust_env=False) as client:
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                response = await client.post(url, content=payload, headers=headers)
                if response.status_code == 200:
                    latencies.append(time.perf_counter() - start)
                else:
                    errors += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    return len(latencies), errors, latencies, elapsed


ARMS = ("without", "empty", "with")


def run(concurrency: int, seconds: float, rounds: int) -> Section:
    section = Section("proxy", "Proxy throughput (real `litellm` proxy, with vs without)")
    always, warm, steady = _conversation()
    with (
        upstream_process(always) as base_url,
        tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp,
    ):
        model_list = [
            {
                "model_name": name,
                "litellm_params": {"model": f"openai/{name}", "api_base": base_url, "api_key": "x"},
            }
            for name in always
        ]
        bench_dir = str(Path(__file__).resolve().parent)
        specs = {
            "without": ProxyProcess({"model_list": model_list}, Path(tmp) / "without"),
            "empty": ProxyProcess(
                {
                    "model_list": model_list,
                    "litellm_settings": {"callbacks": "empty_callback.callback"},
                },
                Path(tmp) / "empty",
                env={"PYTHONPATH": bench_dir},
            ),
            "with": ProxyProcess(
                {
                    "model_list": model_list,
                    "litellm_settings": {"callbacks": "litellm_reasoning.callback"},
                },
                Path(tmp) / "with",
                env={"LITELLM_REASONING_STORE": "memory://"},
            ),
        }
        with proxies(specs) as running:
            section.note(
                "proxy startup: "
                + ", ".join(f"{k} {p.startup_seconds:.1f} s" for k, p in running.items())
            )
            body = {"model": "bench-steady", "messages": steady}

            async def measure() -> dict[str, Any]:
                # warm-up: the two tool-call replies are captured by the callback's proxy
                for proxy in running.values():
                    headers = {"authorization": f"Bearer {proxy.master_key}"}
                    async with httpx.AsyncClient(timeout=30.0, trust_env=False) as client:
                        for model, messages in warm:
                            r = await client.post(
                                proxy.url + "/v1/chat/completions",
                                json={"model": model, "messages": messages},
                                headers=headers,
                            )
                            if r.is_error:  # the proxy's own words, not only its status
                                raise RuntimeError(
                                    f"warm-up {model}: {r.status_code} {r.text[:500]}"
                                )
                    await _load(proxy.url + "/v1/chat/completions", headers, body, concurrency, 1.0)
                # the upstream's own capacity, through the same client
                direct = await _load(
                    base_url + "/chat/completions",
                    {},
                    {**body, "model": "bench-steady"},
                    concurrency,
                    seconds,
                )
                results: dict[str, dict[str, Any]] = {
                    k: {"ok": 0, "err": 0, "lat": [], "elapsed": 0.0, "rps": [], "cpu": 0.0}
                    for k in running
                }
                for r in range(rounds):
                    for name in ARMS if r % 2 == 0 else ARMS[::-1]:
                        proxy = running[name]
                        cpu = proxy.cpu_seconds()
                        ok, err, lat, elapsed = await _load(
                            proxy.url + "/v1/chat/completions",
                            {"authorization": f"Bearer {proxy.master_key}"},
                            body,
                            concurrency,
                            seconds,
                        )
                        res = results[name]
                        res["cpu"] += proxy.cpu_seconds() - cpu
                        res["ok"] += ok
                        res["err"] += err
                        res["lat"] += lat
                        res["elapsed"] += elapsed
                        res["rps"].append(ok / elapsed)
                        print(f"  proxy {name} round {r}: {ok / elapsed:.1f} req/s", flush=True)
                return {"direct": direct, "results": results}

            measured = asyncio.run(measure())
    results = measured["results"]
    d_ok, d_err, d_lat, d_elapsed = measured["direct"]
    rows = []
    rate = {name: results[name]["ok"] / results[name]["elapsed"] for name in ARMS}
    cpu = {name: results[name]["cpu"] / max(results[name]["ok"], 1) for name in ARMS}
    for name in ARMS:
        res = results[name]
        rows.append(
            [
                {"without": "proxy, no callback", "empty": "proxy, empty callback"}.get(
                    name, "proxy with the callback"
                ),
                f"{rate[name]:.1f}",
                " / ".join(f"{x:.1f}" for x in res["rps"]),
                fmt_ms(median(res["lat"])),
                fmt_ms(percentile(res["lat"], 99)),
                fmt_ms(cpu[name]),
                str(res["ok"]),
                str(res["err"]),
            ]
        )
    rows.append(
        [
            "local server alone (capacity)",
            f"{d_ok / d_elapsed:.1f}",
            "—",
            fmt_ms(median(d_lat)),
            fmt_ms(percentile(d_lat, 99)),
            "—",
            str(d_ok),
            str(d_err),
        ]
    )
    w, wo = results["with"], results["without"]
    rps_ratio = rate["with"] / rate["without"]
    p99_ratio = percentile(w["lat"], 99) / percentile(wo["lat"], 99)
    rows.append(
        [
            "ratio with / without",
            fmt_ratio(rps_ratio),
            "",
            "",
            fmt_ratio(p99_ratio),
            fmt_ratio(cpu["with"] / cpu["without"]),
            "",
            "",
        ]
    )
    rows.append(
        [
            "ratio with / empty callback",
            fmt_ratio(rate["with"] / rate["empty"]),
            "",
            "",
            "",
            fmt_ratio(cpu["with"] / cpu["empty"]),
            "",
            "",
        ]
    )
    section.table(
        [
            "target",
            "req/s",
            "req/s per round",
            "p50",
            "p99",
            "proxy CPU / request",
            "requests",
            "errors",
        ],
        rows,
    )
    headroom = (d_ok / d_elapsed) / max(rate["without"], 1e-9)
    section.note(
        f"{concurrency} concurrent clients (httpx, keep-alive), {rounds} rounds of {seconds:g} s "
        "per proxy, the three proxies in turn (order turned around each round); they run side by "
        "side (1 worker each, memory:// store), the idle ones wait while one is loaded. "
        "`empty callback`: the proxy with a `CustomLogger` that does nothing, i.e. what LiteLLM's "
        "callback machinery costs by itself. CPU / request: the proxy process's user + system CPU "
        "time (all threads) over the requests it served."
    )
    section.note(
        "request: the recorded DeepSeek tool loop's third request (9 messages) with reasoning "
        "dropped; the callback restores both tool-call messages' reasoning (captured in a warm-up) "
        "and captures the reply on every request."
    )
    section.note(
        f"the local server runs in its own process (Nagle off, see the e2e section); alone it "
        f"serves {d_ok / d_elapsed:.0f} req/s to the same client ({headroom:.1f}x the proxy "
        "without the callback), so it is not the bottleneck"
        + (" (but the headroom is small: treat with care)" if headroom < 3 else "")
        + ". The client, proxies and server share the machine's CPUs."
    )
    section.summary.append(
        ("proxy req/s with / without", fmt_ratio(rps_ratio), ">= 0.97x", verdict(rps_ratio >= 0.97))
    )
    section.summary.append(
        (
            "proxy req/s: empty callback / without (LiteLLM's floor); with / empty callback",
            f"{fmt_ratio(rate['empty'] / rate['without'])}; "
            f"{fmt_ratio(rate['with'] / rate['empty'])}",
            "—",
            "info",
        )
    )
    section.summary.append(
        (
            "proxy CPU per request with / without; with / empty callback",
            f"{fmt_ratio(cpu['with'] / cpu['without'])}; {fmt_ratio(cpu['with'] / cpu['empty'])}",
            "—",
            "info",
        )
    )
    section.summary.append(("proxy p99 latency with / without", fmt_ratio(p99_ratio), "—", "info"))
    return section
