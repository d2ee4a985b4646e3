"""The cold path where it is common: the real proxy with 4 workers and the Redis store, long agent
histories from a client that drops reasoning, every request on a new connection (so the kernel
hands it to any worker: three requests in four land on a worker that did not serve the
conversation's previous one). With / without the callback."""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from common import (
    TOOLS,
    Section,
    agent_history,
    fmt_ms,
    fmt_ratio,
    median,
    percentile,
    verdict,
    with_reasoning,
)
from proxy_proc import Proxy, ProxyProcess, proxies
from sec_rewrite import hook_kwargs, prime_store
from upstream_proc import upstream_process

from litellm_reasoning import ReasoningCallback

MODEL = "deepseek/deepseek-v4-flash"
"""DeepSeek with tools: every assistant message is looked up and restored (as in `rewrite`)."""

REDIS = "redis://127.0.0.1:6379/0"

ARMS = ("without", "keeping", "empty", "with")
"""`without`: a dropping client, no callback (what a real DeepSeek refuses); `keeping`: a client
that sends every reasoning back itself, no callback (the same wire as `with`: the cost of the
restored bytes in LiteLLM, whoever restores them); `empty`: that client through a proxy with a
callback that does nothing (`empty_callback.py`: what LiteLLM itself costs once any callback is
registered, at this history length); `with`: a dropping client and the callback."""

PROXY_OF = {"without": "without", "keeping": "without", "empty": "empty", "with": "with"}
KEEPING = {"keeping", "empty"}
PRIMED = frozenset({"with"})
"""Arms whose histories' reasoning is written to the store before they run (a dropping client
through the callback)."""

# The upstream's reply: a tool call with reasoning (captured by the callback, dropped by the
# client); its content is replaced by the upstream with "<with reasoning>/<assistant messages>".
# No tool call id: the upstream makes a new one for every reply, as DeepSeek does
# ("call_00_" and 24 random characters in the recordings).
REPLY = {
    "content": "",
    "reasoning_content": "Read the next file before editing anything.",
    "tool_calls": [
        {
            "type": "function",
            "function": {"name": TOOLS[0]["function"]["name"], "arguments": '{"path": "p.py"}'},
        }
    ],
}

REPLY_SHARED_ID = {**REPLY, "tool_calls": [{**REPLY["tool_calls"][0], "id": "call_next"}]}
"""`REPLY` with one tool call id for every reply of every agent: every live reply's tool-call
key is written by many conversations (`shared_keys`: marked, exact copies, second reads), harsher
than Kimi's ids, which repeat only by place. What the `saturation` section answers with; until
2026-12-06 the `workers` and `gateway` sections did too."""


MASTER_KEY_HASH = "litellm_proxy_master_key"
"""What the proxy puts in `user_api_key_hash` for a call made with its master key (LiteLLM's
constant, not a hash): the scope of every call the bench makes."""


def _scope_kwargs(messages: list[Any]) -> dict[str, Any]:
    """What the proxy hands the deployment hook for a call made with its master key, as far as
    keys depend on it: the scope is the namespace and the key."""
    return {**hook_kwargs(messages), "metadata": {"user_api_key_hash": MASTER_KEY_HASH}}


def _prime(store_url: str, histories: list[tuple[list[Any], dict[int, str]]]) -> int:
    """Write each history's reasoning where the proxy's callback looks it up (the proxy's own
    key material, computed in this process)."""
    cb = ReasoningCallback(store_url)
    try:
        return sum(prime_store(cb, m, r, _scope_kwargs(m)) for m, r in histories)
    finally:
        cb.store.close()


async def _load(
    proxy: Proxy | None,
    histories: list[list[Any]],
    seconds: float,
    keep: bool = False,
    direct: str | None = None,
    steps: int | None = None,
) -> tuple[list[float], int, int, int]:
    """One client per history, each continuing its agent loop (its request = its history so
    far; the reply, as a dropping client keeps it unless `keep`, and a tool result appended
    after each) on a new connection per request, for `seconds` or `steps` requests each,
    whichever ends first, through `proxy`, or straight to the local server at `direct` (its
    base URL). Returns (latencies, errors, assistant messages sent, of them with reasoning on
    the wire)."""
    latencies: list[float] = []
    errors = sent = carried = 0
    headers = {"content-type": "application/json"}
    if proxy is not None:
        headers["authorization"] = f"Bearer {proxy.master_key}"
        url, model = proxy.url + "/v1/chat/completions", "agent"
    else:
        assert direct is not None
        url, model = direct + "/chat/completions", MODEL.split("/", 1)[1]
    limits = httpx.Limits(max_keepalive_connections=0)  # a new connection, any worker
    async with httpx.AsyncClient(limits=limits, timeout=60.0, trust_env=False) as client:
        deadline = time.perf_counter() + seconds

        async def agent(history: list[Any]) -> None:
            nonlocal errors, sent, carried
            step = 0
            while time.perf_counter() < deadline and (steps is None or step < steps):
                body = json.dumps({"model": model, "messages": history, "tools": TOOLS})
                start = time.perf_counter()
                response = await client.post(url, content=body, headers=headers)
                elapsed = time.perf_counter() - start
                if response.status_code != 200:
                    errors += 1
                    continue
                latencies.append(elapsed)
                message = response.json()["choices"][0]["message"]
                have, total = (int(x) for x in str(message.get("content")).split("/"))
                carried, sent = carried + have, sent + total
                step += 1
                calls = message["tool_calls"]
                kept = {"reasoning_content": message.get("reasoning_content")} if keep else {}
                history += [
                    {
                        "role": "assistant",
                        "content": message["content"],
                        "tool_calls": calls,
                        **kept,
                    },
                    {"role": "tool", "tool_call_id": calls[0]["id"], "content": f"step {step}"},
                ]

        await asyncio.gather(*(agent(h) for h in histories))
    return latencies, errors, sent, carried


def agent_model_list(base_url: str) -> list[dict[str, Any]]:
    """The proxies' one model group, `agent`, in front of the local server at `base_url`."""
    return [
        {
            "model_name": "agent",
            "litellm_params": {"model": MODEL, "api_base": base_url, "api_key": "x"},
        }
    ]


def proxy_specs(base_url: str, tmp: str, store_url: str, workers: int) -> dict[str, ProxyProcess]:
    """The two proxies in front of the local server at `base_url` (model group `agent`): one
    without a callback, one with this one on the store at `store_url`."""
    model_list = agent_model_list(base_url)
    return {
        "without": ProxyProcess(
            {"model_list": model_list}, Path(tmp) / "without", num_workers=workers
        ),
        "empty": ProxyProcess(
            {
                "model_list": model_list,
                "litellm_settings": {"callbacks": "empty_callback.callback"},
            },
            Path(tmp) / "empty",
            env={"PYTHONPATH": str(Path(__file__).resolve().parent)},
            num_workers=workers,
        ),
        "with": ProxyProcess(
            {
                "model_list": model_list,
                "litellm_settings": {"callbacks": "litellm_reasoning.callback"},
            },
            Path(tmp) / "with",
            env={"LITELLM_REASONING_STORE": store_url},
            num_workers=workers,
        ),
    }


def run(workers: int, history: int, clients: int, seconds: float, rounds: int) -> Section:
    section = Section(
        "workers", f"Proxy workers and Redis: the cold path ({workers} per proxy, with vs without)"
    )
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    # one tenant (the master key) holds every agent's records: above the default cap of 10 000
    store_url = f"{REDIS}?prefix={prefix}&max_records=1000000"
    try:
        import redis

        redis.Redis.from_url(REDIS).ping()
    except Exception as exc:  # no server: reported, not failed
        section.note(f"skipped: no Redis at {REDIS} ({type(exc).__name__})")
        section.summary.append(
            ("proxy, 4 workers: CPU / request with / without", "n/a", "<= 1.05x", "n/a")
        )
        return section
    with (
        upstream_process({MODEL.split("/", 1)[1]: REPLY}, report=True) as base_url,
        tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp,
    ):
        specs = proxy_specs(base_url, tmp, store_url, workers)
        try:
            with proxies(specs, timeout=600.0) as running:
                section.note(
                    "proxy startup: "
                    + ", ".join(f"{k} {p.startup_seconds:.1f} s" for k, p in running.items())
                )
                results = _measure(running, history, clients, seconds, rounds, store_url)
        finally:
            _forget(prefix)
    return _report(section, results, workers, history, clients, seconds, rounds)


def _measure(
    running: dict[str, Proxy],
    size: int,
    clients: int,
    seconds: float,
    rounds: int,
    store_url: str,
    arms: tuple[str, ...] = ARMS,
    proxy_of: dict[str, str] = PROXY_OF,
    keeping: set[str] = KEEPING,
    primed: frozenset[str] = PRIMED,
    together: bool = False,
    settle: int = 0,
) -> dict[str, dict[str, Any]]:
    """CPU, latency and what reached the wire per arm (`arms`, each on the proxy
    `proxy_of[arm]`; an arm in `keeping` has a client sending its reasoning back, the others
    drop it; an arm in `primed` has its histories' reasoning written to the store first).
    `together`: every arm's agents run at the same time (each arm on a proxy of its own), so
    whatever else the machine does in a round weighs on every arm alike; otherwise the arms
    take turns, the order flipped each round. `settle`: each round's agents first take that
    many steps unmeasured, so nearly every worker has served each conversation before the
    measured requests (a long conversation's steady state: each worker's first request of it
    left out)."""
    results: dict[str, dict[str, Any]] = {
        k: {
            "lat": [],
            "err": 0,
            "ok": 0,
            "cpu": 0.0,
            "elapsed": 0.0,
            "sent": 0,
            "carried": 0,
            "rounds": [],
        }
        for k in arms
    }
    for name in running:
        # Every worker's first calls (LiteLLM's clients, the store's connection) are not measured.
        warm = [agent_history(6, seed=f"warm-{name}-{c}")[0] for c in range(clients * 2)]
        asyncio.run(_load(running[name], warm, min(3.0, seconds)))  # the smoke run: shorter
    if together:
        if len({proxy_of[name] for name in arms}) < len(arms):
            raise ValueError("arms run together need a proxy each (its CPU is the arm's)")
        for r in range(rounds):
            _round_together(
                running,
                size,
                clients,
                seconds,
                r,
                store_url,
                arms,
                proxy_of,
                keeping,
                primed,
                results,
                settle,
            )
        return results
    for r in range(rounds):
        for name in arms if r % 2 == 0 else arms[::-1]:
            proxy = running[proxy_of[name]]
            requests = _agents(name, r, size, clients, store_url, keeping, primed)
            if settle:  # the agents' lists grow in place: the measured steps continue them
                asyncio.run(_load(proxy, requests, 600.0, keep=name in keeping, steps=settle))
            cpu = proxy.group_cpu_seconds()
            start = time.perf_counter()
            load = asyncio.run(_load(proxy, requests, seconds, keep=name in keeping))
            elapsed = time.perf_counter() - start
            _tally(results[name], proxy.group_cpu_seconds() - cpu, elapsed, load)
            print(
                f"  workers {name} round {r}: {len(load[0])} requests, {load[1]} errors", flush=True
            )
    return results


def _agents(
    name: str,
    r: int,
    size: int,
    clients: int,
    store_url: str,
    keeping: set[str],
    primed: frozenset[str],
) -> list[list[Any]]:
    """Arm `name`'s agents for round `r`: new conversations (none remembered by any worker
    yet), their reasoning written to the store first for a primed arm, each as its client
    sends it (with its reasoning for a keeping arm)."""
    histories = [
        agent_history(size, seed=f"{name}-{r}-{c}-{random.random()}") for c in range(clients)
    ]
    if name in primed:
        _prime(store_url, histories)
    return [with_reasoning(h, kept) if name in keeping else list(h) for h, kept in histories]


def _tally(
    res: dict[str, Any], used: float, elapsed: float, load: tuple[list[float], int, int, int]
) -> None:
    """Add one round of an arm (`used` CPU seconds, `elapsed` seconds, what `_load` returned)
    to its results."""
    lat, err, sent, carried = load
    res["elapsed"] += elapsed
    res["cpu"] += used
    res["rounds"].append(used / max(len(lat), 1))  # CPU per request in this round
    res["lat"] += lat
    res["ok"] += len(lat)
    res["err"] += err
    res["sent"] += sent
    res["carried"] += carried


def _round_together(
    running: dict[str, Proxy],
    size: int,
    clients: int,
    seconds: float,
    r: int,
    store_url: str,
    arms: tuple[str, ...],
    proxy_of: dict[str, str],
    keeping: set[str],
    primed: frozenset[str],
    results: dict[str, dict[str, Any]],
    settle: int = 0,
) -> None:
    """One round of `_measure(..., together=True)`: every arm's agents at once."""
    requests = {name: _agents(name, r, size, clients, store_url, keeping, primed) for name in arms}

    async def all_arms(
        seconds: float, steps: int | None
    ) -> list[tuple[list[float], int, int, int]]:
        return await asyncio.gather(
            *(
                _load(
                    running[proxy_of[name]],
                    requests[name],
                    seconds,
                    keep=name in keeping,
                    steps=steps,
                )
                for name in arms
            )
        )

    if settle:  # the agents' lists grow in place: the measured steps continue them
        asyncio.run(all_arms(600.0, settle))
    cpu = {name: running[proxy_of[name]].group_cpu_seconds() for name in arms}
    start = time.perf_counter()
    loads = asyncio.run(all_arms(seconds, None))
    elapsed = time.perf_counter() - start
    for name, load in zip(arms, loads, strict=True):
        used = running[proxy_of[name]].group_cpu_seconds() - cpu[name]
        _tally(results[name], used, elapsed, load)
        print(
            f"  workers {name} round {r} (together): {len(load[0])} requests, {load[1]} errors",
            flush=True,
        )


def _forget(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    for start in range(0, len(keys), 500):
        client.delete(*keys[start : start + 500])


def _report(
    section: Section,
    results: dict[str, dict[str, Any]],
    workers: int,
    size: int,
    clients: int,
    seconds: float,
    rounds: int,
) -> Section:
    rate = {k: r["ok"] / r["elapsed"] if r["elapsed"] else float("nan") for k, r in results.items()}
    cpu = {k: r["cpu"] / max(r["ok"], 1) for k, r in results.items()}
    p50 = {k: median(r["lat"]) for k, r in results.items()}
    rows = [
        [
            {
                "without": "no callback, dropping client",
                "keeping": "no callback, client keeping reasoning",
                "empty": "an empty callback (LiteLLM's own cost of one), client keeping reasoning",
                "with": "with the callback (Redis store), dropping client",
            }[k],
            f"{rate[k]:.1f}",
            fmt_ms(p50[k]),
            fmt_ms(percentile(r["lat"], 99)),
            fmt_ms(cpu[k]),
            f"{r['carried']}/{r['sent']}",
            str(r["ok"]),
            str(r["err"]),
        ]
        for k, r in results.items()
    ]
    cpu_ratio = cpu["with"] / cpu["without"]
    added = p50["with"] - p50["without"]
    rps_ratio = rate["with"] / rate["without"]
    for base in ("without", "keeping", "empty"):
        rows.append(
            [
                f"with / {base}",
                fmt_ratio(rate["with"] / rate[base]),
                f"{(p50['with'] - p50[base]) * 1000:+.2f} ms",
                "",
                fmt_ratio(cpu["with"] / cpu[base]),
                "",
                "",
                "",
            ]
        )
    section.table(
        [
            "proxy",
            "req/s",
            "p50",
            "p99",
            "CPU / request (all workers)",
            "assistant messages with reasoning on the wire",
            "requests",
            "errors",
        ],
        rows,
    )
    per_round = [
        f"{with_cpu / keeping_cpu:.3f}x"
        for with_cpu, keeping_cpu in zip(
            results["with"]["rounds"], results["keeping"]["rounds"], strict=False
        )
    ]
    section.note(
        "CPU / request with / keeping, round by round (how far one round's ratio is from "
        f"the whole run's): {', '.join(per_round)}"
    )
    w = results["with"]
    restored_all = w["sent"] > 0 and w["carried"] == w["sent"]
    section.note(
        f"{workers} workers per proxy, {clients} agents each continuing its own {size}-message "
        "history (agent tool loop, DeepSeek with tools, reasoning dropped by the client; "
        "reasoning primed in Redis for the history, captured live for each new reply), a new "
        f"connection per request (any worker answers), {rounds} rounds of {seconds:g} s per "
        "arm (the arms in turn, order turned around each round; `keeping` runs on the proxy "
        "without the callback, `empty` on a third proxy whose callback does nothing); new "
        "conversations every round. CPU: every process of the proxy's group (user + system) "
        "over the requests it served. The reasoning column is what the local server counted on "
        "the wire; with the callback every assistant message must carry it "
        f"({'yes' if restored_all else 'NO'})."
    )
    section.summary += [
        (
            f"proxy, {workers} workers, Redis, {size} messages: CPU / request with / without",
            fmt_ratio(cpu_ratio),
            "<= 1.05x",
            verdict(cpu_ratio <= 1.05),
        ),
        (
            f"proxy, {workers} workers: added p50 latency",
            f"{added * 1000:.2f} ms",
            "<= 0.5 ms",
            verdict(added <= 0.0005),
        ),
        (
            f"proxy, {workers} workers: req/s with / without",
            fmt_ratio(rps_ratio),
            ">= 0.97x",
            verdict(rps_ratio >= 0.97),
        ),
        (
            f"proxy, {workers} workers: every assistant message restored",
            f"{w['carried']}/{w['sent']}",
            "all",
            verdict(restored_all),
        ),
        (
            f"proxy, {workers} workers: CPU / request with the callback / a client keeping its "
            "reasoning (same wire, no callback)",
            fmt_ratio(cpu["with"] / cpu["keeping"]),
            "<= 1.15x",
            verdict(cpu["with"] / cpu["keeping"] <= 1.15),
        ),
        (
            f"proxy, {workers} workers: CPU / request, an empty callback / no callback (LiteLLM's "
            "own cost of a callback; both clients keeping reasoning); with / empty callback",
            f"{fmt_ratio(cpu['empty'] / cpu['keeping'])}; {fmt_ratio(cpu['with'] / cpu['empty'])}",
            "—",
            "info",
        ),
    ]
    return section
