"""Measured as gateways are measured (the form of BerriAI/ai-gateway-bench): the latency the
proxy adds over calling the local server directly, p50 and p99, at 1, 4, 16 and 64 concurrent
agents, through the real proxy with 4 workers and the Redis store. Arms: the local server
called directly (the baseline), the proxy without a callback and a client dropping reasoning,
the proxy without a callback and a client keeping it (the same wire as the callback's), the
proxy with the callback and a dropping client. Per arm: CPU per request over the proxy's
processes, assistant messages that reached the server without their reasoning, calls failed.
(The saturation arm, strict upstreams refusing what lacks reasoning: the `saturation` section.)"""

from __future__ import annotations

import asyncio
import random
import tempfile
import uuid
from typing import Any

from common import (
    Section,
    agent_history,
    fmt_ms,
    fmt_ratio,
    median,
    percentile,
    verdict,
    with_reasoning,
)
from proxy_proc import proxies
from sec_workers import MODEL, REDIS, REPLY, _forget, _load, _prime, proxy_specs
from upstream_proc import upstream_process

ARMS = ("direct", "without", "keeping", "with")
LABELS = {
    "direct": "local server, called directly",
    "without": "proxy, no callback, dropping client",
    "keeping": "proxy, no callback, client keeping reasoning",
    "with": "proxy with the callback (Redis), dropping client",
}
PROXY_OF = {"without": "without", "keeping": "without", "with": "with"}


def run(
    workers: int, levels: list[int], history: int, steps: int, seconds: float, rounds: int
) -> Section:
    section = Section(
        "gateway",
        f"Gateway latency: added over calling the server directly ({workers} workers, Redis)",
    )
    try:
        import redis

        redis.Redis.from_url(REDIS).ping()
    except Exception as exc:  # no server: reported, not failed
        section.note(f"skipped: no Redis at {REDIS} ({type(exc).__name__})")
        return section
    prefix = f"bench-gw-{uuid.uuid4().hex[:8]}:"
    store_url = f"{REDIS}?prefix={prefix}&max_records=1000000"
    with (
        upstream_process({MODEL.split("/", 1)[1]: REPLY}, report=True) as base_url,
        tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp,
    ):
        specs = proxy_specs(base_url, tmp, store_url, workers)
        try:
            with proxies(specs, timeout=600.0) as running:
                for name, proxy in running.items():  # first calls of every worker: not measured
                    warm = [agent_history(6, seed=f"gw-warm-{name}-{c}")[0] for c in range(8)]
                    asyncio.run(_load(proxy, warm, 3.0, steps=3))
                rows: list[list[str]] = []
                cells: dict[tuple[int, str], dict[str, Any]] = {}
                for level in levels:
                    for r in range(rounds):
                        for name in ARMS if (level + r) % 2 else ARMS[::-1]:
                            cell = _cell(
                                running, base_url, store_url, name, level, history, steps, seconds
                            )
                            _add(cells.setdefault((level, name), {}), cell)
                    rows += _rows(level, cells)
        finally:
            _forget(prefix)
    section.table(
        [
            "agents",
            "arm",
            "requests",
            "p50",
            "p99",
            "added p50",
            "added p99",
            "CPU / request (proxy)",
            "messages without reasoning",
            "failed",
        ],
        rows,
    )
    section.note(
        f"Each agent continues its own {history}-message tool loop by {steps} requests (DeepSeek "
        f"with tools; the history's reasoning primed in Redis for the callback's arm, each new "
        f"reply captured live), a new connection per request (any worker answers), at most "
        f"{seconds:g} s per arm and level, new conversations for every cell (every arm sends the "
        f"same history lengths); {rounds} rounds per level, the arms one after the other "
        f"(order turned around each round). Added: the arm's p50/p99 minus the "
        f"direct call's at the same level. CPU: every process of the proxy's group over the "
        f"requests it served. Messages without reasoning: what the local server counted on the "
        f"wire (a dropping client without the callback sends none back)."
    )
    with_cells = [cells[level, "with"] for level in levels]
    unrestored = sum(c["sent"] - c["carried"] for c in with_cells)
    sent = sum(c["sent"] for c in with_cells)
    failed = sum(c["err"] for c in with_cells)
    top = max(levels)
    section.summary += [
        (
            f"gateway, {level} agents: added p50 / p99 with the callback (over a direct call)",
            f"{_added(cells, level, 50)} / {_added(cells, level, 99)}",
            "—",
            "info",
        )
        for level in levels
    ]
    section.summary += [
        (
            f"gateway, {top} agents: CPU / request with the callback / without; / keeping client",
            f"{_cpu_ratio(cells, top, 'without')}; {_cpu_ratio(cells, top, 'keeping')}",
            "—",
            "info",
        ),
        (
            "gateway, callback arm: assistant messages without their reasoning",
            f"{unrestored} of {sent}",
            "0",
            verdict(sent > 0 and unrestored == 0),
        ),
        ("gateway, callback arm: calls failed", str(failed), "0", verdict(failed == 0)),
    ]
    return section


def _cell(
    running: dict[str, Any],
    base_url: str,
    store_url: str,
    name: str,
    level: int,
    size: int,
    steps: int,
    seconds: float,
) -> dict[str, Any]:
    """One arm at one concurrency level: `level` new conversations, each continued by `steps`
    requests (at most `seconds`): every arm sends the same histories."""
    histories = [
        agent_history(size, seed=f"gw-{name}-{level}-{c}-{random.random()}") for c in range(level)
    ]
    if name == "with":
        _prime(store_url, histories)
    if name == "keeping":
        requests = [with_reasoning(h, r) for h, r in histories]
    else:
        requests = [list(h) for h, _ in histories]
    proxy = running[PROXY_OF[name]] if name != "direct" else None
    cpu = proxy.group_cpu_seconds() if proxy is not None else 0.0
    lat, err, sent, carried = asyncio.run(
        _load(proxy, requests, seconds, keep=name == "keeping", direct=base_url, steps=steps)
    )
    used = proxy.group_cpu_seconds() - cpu if proxy is not None else float("nan")
    print(f"  gateway {level} agents, {name}: {len(lat)} requests, {err} failed", flush=True)
    return {"lat": lat, "err": err, "sent": sent, "carried": carried, "cpu": used}


def _add(total: dict[str, Any], cell: dict[str, Any]) -> None:
    """`cell` (one round of one arm and level) added to `total`, that arm and level's rounds."""
    for name, value in cell.items():
        total[name] = total[name] + value if name in total else value


def _added(cells: dict[tuple[int, str], dict[str, Any]], level: int, q: int) -> str:
    arm, direct = cells[level, "with"]["lat"], cells[level, "direct"]["lat"]
    return fmt_ms(percentile(arm, q) - percentile(direct, q))


def _cpu_ratio(cells: dict[tuple[int, str], dict[str, Any]], level: int, base: str) -> str:
    def per_request(name: str) -> float:
        cell = cells[level, name]
        return float(cell["cpu"]) / max(len(cell["lat"]), 1)

    return fmt_ratio(per_request("with") / per_request(base))


def _rows(level: int, cells: dict[tuple[int, str], dict[str, Any]]) -> list[list[str]]:
    direct = cells[level, "direct"]["lat"]
    rows = []
    for name in ARMS:
        cell = cells[level, name]
        lat = cell["lat"]
        added = name != "direct"
        rows.append(
            [
                str(level),
                LABELS[name],
                str(len(lat)),
                fmt_ms(median(lat)),
                fmt_ms(percentile(lat, 99)),
                fmt_ms(median(lat) - median(direct)) if added else "—",
                fmt_ms(percentile(lat, 99) - percentile(direct, 99)) if added else "—",
                fmt_ms(cell["cpu"] / max(len(lat), 1)) if added else "—",
                f"{cell['sent'] - cell['carried']} of {cell['sent']}",
                str(cell["err"]),
            ]
        )
    return rows
