"""Profile the hot paths with pyinstrument: the pre-call rewrite on a long history, and
`acompletion` end to end with the callback. Writes the full call trees next to the results."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path
from typing import Any

import litellm
from common import Section, agent_history
from sec_rewrite import fresh, prime_store, rewrite_once

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.memo.prefix_cache import PrefixCache
from litellm_reasoning.stores import MemoryStore


def _aggregate(session: Any, package: str = "litellm_reasoning") -> tuple[float, list[tuple]]:
    """(total seconds, [(self seconds, inclusive seconds, function, file:line)]) for the package's
    functions; inclusive time counts each function once per stack (no double counting of
    recursion)."""
    root = session.root_frame()
    own: dict[tuple[str, str], float] = defaultdict(float)
    inclusive: dict[tuple[str, str], float] = defaultdict(float)

    def walk(frame: Any, on_stack: frozenset[tuple[str, str]]) -> None:
        path = frame.file_path or ""
        key = (frame.function or "?", f"{path.split(package + '/')[-1]}:{frame.line_no}")
        mine = package + "/" in path and "/bench/" not in path
        if mine:
            own[key] += frame.total_self_time
            if key not in on_stack:
                inclusive[key] += frame.time
        stack = on_stack | {key} if mine else on_stack
        for child in frame.children:
            walk(child, stack)

    if root is None:
        return 0.0, []
    walk(root, frozenset())
    rows = [(own[k], inclusive[k], k[0], k[1]) for k in inclusive]
    rows.sort(key=lambda r: -r[1])
    return root.time, rows


def _profile(coro_factory: Any, out: Path) -> tuple[float, list[tuple]]:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    asyncio.run(coro_factory())
    profiler.stop()
    out.write_text(profiler.output_text(unicode=True, color=False, show_all=False))
    return _aggregate(profiler.last_session)


def run(out_dir: Path, rewrite_size: int, rewrite_reps: int, e2e_reps: int) -> Section:
    section = Section("profile", "Profile of the hot paths (pyinstrument)")
    try:
        import pyinstrument  # noqa: F401
    except ImportError:
        section.note("n/a: pyinstrument is not installed (`pip install pyinstrument`)")
        section.summary.append(("profile", "n/a", "—", "n/a (no pyinstrument)"))
        return section
    out_dir.mkdir(parents=True, exist_ok=True)
    cb = ReasoningCallback(MemoryStore(max_records=100_000))
    previous = list(litellm.callbacks)
    litellm.callbacks = [cb]
    messages, reasoning = agent_history(rewrite_size, seed="profile")
    prime_store(cb, messages, reasoning)

    copies = [fresh(messages) for _ in range(rewrite_reps)]  # new dicts per request

    asyncio.run(rewrite_once(cb, fresh(messages[:-2])))  # the conversation's previous request

    async def rewrites() -> None:
        for copy in copies:
            await rewrite_once(cb, copy)

    cold_copies = [fresh(messages) for _ in range(rewrite_reps)]

    async def cold_rewrites() -> None:
        # nothing remembered: a restart, or a worker that never saw the conversation
        for copy in cold_copies:
            cb.prefix_cache = PrefixCache()
            await rewrite_once(cb, copy)

    try:
        total, rows = _profile(rewrites, out_dir / "profile_rewrite.txt")
        cold_total, cold_rows = _profile(cold_rewrites, out_dir / "profile_cold.txt")
    finally:
        litellm.callbacks = previous
    lines = [
        f"Pre-call rewrite, {rewrite_size}-message history, {rewrite_reps} calls, each with new "
        "message dicts (the conversation's earlier request remembered) "
        f"({total:.2f} s sampled); package functions by inclusive time:",
        "",
    ]
    section.lines += lines
    _share_table(section, rows, total, 14)
    section.lines += [
        f"The same rewrite cold (nothing remembered), {rewrite_reps} calls "
        f"({cold_total:.2f} s sampled):",
        "",
    ]
    _share_table(section, cold_rows, cold_total, 16)
    e2e_rows = _profile_e2e(out_dir, e2e_reps)
    if e2e_rows is not None:
        section.lines.append(
            f"`acompletion` end to end with the callback (100-message history, {e2e_reps} calls, "
            "wall time incl. waiting on the local server): share "
            "of the sampled time spent in litellm_reasoning:"
        )
        section.lines.append("")
        section.table(["function", "where", "inclusive", "self"], e2e_rows)
    section.note(
        f"full call trees: `{(out_dir / 'profile_rewrite.txt').name}`, "
        f"`{(out_dir / 'profile_cold.txt').name}` and "
        f"`{(out_dir / 'profile_e2e.txt').name}` in `{out_dir.name}/`."
    )
    return section


def _share_table(section: Section, rows: list[tuple], total: float, count: int) -> None:
    """The first `count` package functions of a profile with their share of `total`."""
    section.table(
        ["function", "where", "inclusive", "self"],
        [
            [f"`{fn}`", f"`{where}`", f"{inc / total:.0%}", f"{self_ / total:.0%}"]
            for self_, inc, fn, where in rows[:count]
        ],
    )


def _profile_e2e(out_dir: Path, reps: int) -> list[list[str]] | None:
    from common import TOOLS
    from sec_e2e import REPLY, UPSTREAM_MODEL, _register
    from upstream_proc import upstream_process

    messages, reasoning = agent_history(100, seed="profile-e2e")
    cb = ReasoningCallback(MemoryStore(max_records=100_000))
    with upstream_process({UPSTREAM_MODEL: REPLY}) as base_url:
        _register(cb)
        prime_store(cb, messages, reasoning)
        params = {
            "model": f"deepseek/{UPSTREAM_MODEL}",
            "api_base": base_url,
            "api_key": "k",
            "messages": messages,
            "tools": TOOLS,
        }

        async def calls() -> None:
            for _ in range(reps):
                await litellm.acompletion(**params)
            await asyncio.sleep(0.05)

        asyncio.run(calls())  # warm
        try:
            total, rows = _profile(calls, out_dir / "profile_e2e.txt")
        finally:
            _register(None)
    top = [r for r in rows if r[2] in ("async_pre_call_deployment_hook", "_acapture")]
    top += [r for r in rows if r not in top][:6]
    return [
        [f"`{fn}`", f"`{where}`", f"{inc / total:.1%}", f"{self_ / total:.1%}"]
        for self_, inc, fn, where in top
    ]
