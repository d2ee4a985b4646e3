"""Shared pieces of the benchmark: statistics, machine facts, agent histories, a result record."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "litellm_reasoning" / "data" / "deepseek_tool_loop.json"

# --------------------------------------------------------------------------- statistics


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    if ms != ms:  # NaN
        return "n/a"
    return f"{ms:.3f} ms" if ms < 10 else f"{ms:.1f} ms"


def fmt_ratio(value: float) -> str:
    return "n/a" if value != value else f"{value:.3f}x"


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "NOT met")


# --------------------------------------------------------------------------- results


@dataclass
class Section:
    """One section of the report: a title, a markdown table, notes, and headline rows."""

    key: str
    title: str
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(measure, value, goal, verdict) rows for the headline table."""

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self.lines.append("| " + " | ".join(header) + " |")
        self.lines.append("|" + "|".join(" --- " for _ in header) + "|")
        self.lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        self.lines.append("")

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"  note: {text}", flush=True)

    def markdown(self) -> str:
        out = [f"## {self.title}", "", *self.lines]
        out += [f"* {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"


def machine() -> dict[str, str]:
    import litellm  # noqa: F401 - imported for its version below

    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    from importlib.metadata import version

    commit = "?"
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "litellm_reasoning"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        commit += " (+ uncommitted changes in litellm_reasoning/)" if dirty else ""
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "load average at start": load,
        "python": sys.version.split()[0] + f" ({platform.python_implementation()})",
        "litellm": version("litellm"),
        "openai": version("openai"),
        "platform": platform.platform(),
        "commit": commit,
    }


# --------------------------------------------------------------------------- histories

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')} in the workspace",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("read_file", "run_tests", "edit_file")
]

_REASONING = (
    "The user wants the failing test fixed. I should read the module under test first, then run "
    "the suite to see the exact assertion, and only then edit: the last change touched the "
    "parser, so the regression is probably there. Step {i}: check what the previous tool result "
    "says before deciding the next call; if the traceback names a line, read around it."
)
_TOOL_RESULT = (
    "def parse(line):\n    head, _, tail = line.partition(':')\n    return head.strip(), "
    "tail.strip()\n# step {i}: 3 passed, 1 failed (test_parse_empty: AssertionError)\n"
)


def _call_id(seed: str, i: int) -> str:
    return f"call_{uuid.uuid5(uuid.NAMESPACE_OID, f'{seed}/{i}').hex[:24]}"


def agent_history(
    n_messages: int, *, steps_per_turn: int = 8, seed: str = "bench"
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """An agent session of exactly `n_messages`: a system prompt, then turns of a user message,
    `steps_per_turn` tool calls (assistant + tool result) and a final answer.

    Returns the history as a reasoning-dropping client sends it (role, content, tool calls), and
    the reasoning each assistant message had (index -> text) for the store.
    """
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the tools. Be brief."}
    ]
    reasoning: dict[int, str] = {}
    i = 0
    while len(messages) < n_messages:
        i += 1
        messages.append({"role": "user", "content": f"Fix the failing parser test (task {i})."})
        for step in range(steps_per_turn):
            if len(messages) >= n_messages - 1:
                break
            call_id = _call_id(seed, len(messages))
            tool = TOOLS[step % len(TOOLS)]["function"]["name"]
            reasoning[len(messages)] = _REASONING.format(i=len(messages))
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": tool, "arguments": json.dumps({"path": "p.py"})},
                        }
                    ],
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": _TOOL_RESULT.format(i=len(messages)),
                }
            )
        if len(messages) < n_messages:
            reasoning[len(messages)] = _REASONING.format(i=len(messages))
            messages.append({"role": "assistant", "content": f"Fixed it (task {i})."})
    return messages[:n_messages], {k: v for k, v in reasoning.items() if k < n_messages}


def with_reasoning(messages: list[dict[str, Any]], reasoning: dict[int, str]) -> list[Any]:
    """The history as a client that keeps reasoning sends it."""
    return [
        {**m, "reasoning_content": reasoning[i]} if i in reasoning else m
        for i, m in enumerate(messages)
    ]


def deepseek_recording() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text())
    return data


# --------------------------------------------------------------------------- timing


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    out: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def rounds_within(budget: float, seconds_per_round: float, least: int, most: int) -> int:
    """How many rounds of `seconds_per_round` fit in `budget` seconds, at least `least` and at
    most `most`."""
    return max(least, min(most, int(budget / max(seconds_per_round, 1e-6))))


def interleaved(arms: dict[str, Callable[[], Any]], repeat: int) -> dict[str, list[float]]:
    """Run every arm `repeat` times, alternating the order each round to cancel drift."""
    out: dict[str, list[float]] = {name: [] for name in arms}
    names = list(arms)
    for r in range(repeat):
        for name in names if r % 2 == 0 else reversed(names):
            start = time.perf_counter()
            arms[name]()
            out[name].append(time.perf_counter() - start)
    return out


Rewrite = Callable[[], Awaitable[tuple[float, list[Any]]]]
"""One rewrite of a request: (its process CPU seconds, what it sent)."""

REWRITE_COLUMNS = [
    "restored",
    "json.dumps (floor)",
    "rewrite",
    "ratio",
    "rewrite, cold",
    "ratio, cold",
    "reps",
]
"""The columns of a conversation format's table in the rewrite section, after its size."""


def rewrite_row(
    size: str,
    restored: int,
    wire: list[Any],
    warm: Rewrite,
    cold: Rewrite,
    budget_seconds: float,
    min_repeat: int,
) -> tuple[list[str], float, float]:
    """A format's table row (`REWRITE_COLUMNS` after `size`) and its warm and cold medians in
    seconds: `json.dumps(wire)` (the floor), `warm` and `cold` interleaved in process CPU time,
    the order turned each round, as many rounds as fit in about `budget_seconds`."""
    start = time.perf_counter()
    asyncio.run(cold())
    one = time.perf_counter() - start  # a round: about a cold, a warm (two calls), a dumps
    repeat = rounds_within(budget_seconds, 3 * one, min_repeat, 500)

    async def measure() -> dict[str, list[float]]:
        times: dict[str, list[float]] = {"dumps": [], "warm": [], "cold": []}
        for r in range(repeat):
            for arm in ("dumps", "warm", "cold")[:: 1 if r % 2 else -1]:
                if arm == "dumps":
                    s = time.process_time()
                    json.dumps(wire)
                    times[arm].append(time.process_time() - s)
                else:
                    times[arm].append((await (warm if arm == "warm" else cold)())[0])
        return times

    times = asyncio.run(measure())
    dumps, warm_s, cold_s = (median(times[a]) for a in ("dumps", "warm", "cold"))
    row = [
        size,
        str(restored),
        fmt_ms(dumps),
        fmt_ms(warm_s),
        fmt_ratio(warm_s / dumps),
        fmt_ms(cold_s),
        fmt_ratio(cold_s / dumps),
        str(repeat),
    ]
    return row, warm_s, cold_s


@dataclass
class HookArms:
    """A conversation format's rewrite arms, through the deployment hook as LiteLLM calls it
    for `call_type` (the hook rewrites `kwargs[field]`): `once`, a request of new dicts (as the
    proxy parses them); `warm`, after the history's previous request (two items shorter);
    `cold`, with the format's prefix memo (the engine's attribute `memo`) empty."""

    cb: Any
    kwargs_of: Callable[[list[Any]], dict[str, Any]]
    call_type: str
    field: str
    memo: str
    empty_memo: Callable[[], Any]

    async def once(self, history: list[Any]) -> tuple[float, list[Any]]:
        kwargs = self.kwargs_of(json.loads(json.dumps(history)))
        start = time.process_time()
        out = await self.cb.async_pre_call_deployment_hook(kwargs, self.call_type)
        elapsed = time.process_time() - start
        # No reply follows: the call ends as a failed one would, closing its capture entry.
        self.cb.log_failure_event(
            kwargs["litellm_logging_obj"].model_call_details, None, None, None
        )
        assert out is not None
        return elapsed, out[self.field]

    async def warm(self, history: list[Any]) -> tuple[float, list[Any]]:
        await self.once(history[:-2])
        return await self.once(history)

    async def cold(self, history: list[Any]) -> tuple[float, list[Any]]:
        engine = self.cb.engine
        remembered = getattr(engine, self.memo)
        setattr(engine, self.memo, self.empty_memo())
        try:
            return await self.once(history)
        finally:
            setattr(engine, self.memo, remembered)


def rewrite_table(
    section: Section,
    arms: HookArms,
    cases: Iterator[tuple[list[Any], int]],
    names: tuple[str, str, str],
    budget_seconds: float,
    min_repeat: int,
) -> None:
    """A conversation format's table of the rewrite section: for each `(history, records
    primed for it)` of `cases` (made as the loop reaches it), a cold and a warm rewrite checked
    (every primed record restored, the warm request sent as the cold one), then its
    `rewrite_row`. `names`: the format's name in progress lines, the table's heading, its
    first column."""
    label, heading, first_column = names
    rows = []
    for history, primed in cases:
        before = arms.cb.stats["restored"]
        _, wire = asyncio.run(arms.cold(history))
        restored = arms.cb.stats["restored"] - before
        assert restored == primed, (restored, primed)
        _, warm_wire = asyncio.run(arms.warm(history))
        assert warm_wire == wire, "the remembered history changed what is sent"
        row, warm, cold = rewrite_row(
            str(len(history)),
            restored,
            wire,
            lambda history=history: arms.warm(history),
            lambda history=history: arms.cold(history),
            budget_seconds,
            min_repeat,
        )
        rows.append(row)
        print(f"  {label} n={len(history)}: warm {fmt_ms(warm)} cold {fmt_ms(cold)}", flush=True)
    section.lines.append(f"{heading}:")
    section.lines.append("")
    section.table([first_column, *REWRITE_COLUMNS], rows)


def chunks(seq: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def delete_redis_prefix(url: str, prefix: str) -> None:
    """Delete every key under `prefix` (what a bench arm wrote to the local Redis)."""
    with contextlib.suppress(Exception):
        import redis

        client = redis.Redis.from_url(url, socket_timeout=2)
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
        client.close()
