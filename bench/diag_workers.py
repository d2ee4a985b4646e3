"""Where the callback's CPU goes in the `workers` setup (4 workers, Redis, long agent histories):
diagnostic arms beside `with` and `keeping`, and the garbage collector of every worker counted.

    python bench/diag_workers.py --arms with,hollow,onloop,keeping --rounds 4 --seconds 30

Arms: `with`, `keeping`, `without`, `empty` as in `sec_workers`; `hollow`: the callback's class
with every hook returning at once (a keeping client: LiteLLM's own cost of this hook set);
`sleepy`: the hollow class whose pre-call hook waits `DIAG_SLEEP_MS` (default 5) on the loop's
timer (a keeping client: what a longer stay in the worker costs LiteLLM itself); `inplace`: the
callback with its rendered messages copied into the caller's dicts (what the rendered dicts
cost the collector); `updated`: `inplace` by one `dict.update` per message (no `clear`: what an
in-place render would do); `onloop`: the callback with its Redis calls on the event loop's
thread (no hand-off to the store's threads); `nosummary`: the callback with its decisions
summary kept off LiteLLM's logging metadata; `untracked`: the callback with its rendered
messages taken off the collector's lists when the hook returns; `holding`: the callback whose
Redis store reads only keys it has not found before (unsafe: the ceiling of not re-reading held
records); `nocapture`: the callback capturing no reply (what the capture and the write cost);
`before`: the callback as the package in `--before DIR` has it (a directory holding an earlier
commit's `litellm_reasoning/`, its accelerator built): a change against its parent, at once.
Prints, per arm, CPU per request (the proxy's process group) and round by round, and per proxy
the collections per request of each generation and their CPU time, the callback's
decoded-record cache hits and misses and its own restored count (`gc_probe/sitecustomize.py` in
every worker); with `--census`, what each proxy's collector moved to the oldest generation per
request, by type (it can crash a worker: see `gc_probe`). `--together` runs the arms at the
same time, each on its own proxy (what else the machine does weighs on every arm alike);
`--settle N` leaves each round's first N steps per agent unmeasured (a long conversation's
steady state: each worker's first request of it left out). Measurements, not designs; see
bench/README.md, "Where the callback's proxy CPU goes"."""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sec_workers
from proxy_proc import ProxyProcess, proxies
from upstream_proc import upstream_process

HERE = Path(__file__).resolve().parent

CALLBACK_OF = {
    "without": None,
    "empty": "empty_callback.callback",
    "hollow": "diag_callbacks.hollow",
    "sleepy": "diag_callbacks.sleepy",
    "inplace": "diag_callbacks.inplace",
    "updated": "diag_callbacks.updated",
    "with": "litellm_reasoning.callback",
    "onloop": "diag_callbacks.onloop",
    "nosummary": "diag_callbacks.nosummary",
    "untracked": "diag_callbacks.untracked",
    "holding": "diag_callbacks.holding",
    "nocapture": "diag_callbacks.nocapture",
    "timed": "diag_callbacks.timed",
    "before": "litellm_reasoning.callback",
}
PROXY_OF = {**{arm: arm for arm in CALLBACK_OF}, "keeping": "without"}
KEEPING = {"keeping", "empty", "hollow", "sleepy"}
PRIMED = frozenset(CALLBACK_OF) - KEEPING - {"without"}
"""Every arm whose client drops its reasoning and whose proxy restores it."""
FIGURES = 9
"""What `_collections` sums per proxy: collections of generations 0-2, their CPU seconds, and
the decoded-record cache's hits and misses, and the messages the callback counts as restored."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", default="with,hollow,onloop,keeping")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--history", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--settle",
        type=int,
        default=0,
        help="unmeasured steps per agent at the start of each round (a long conversation's "
        "steady state: each worker's first request of it left out)",
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="run the arms at the same time, each on its own proxy (drift weighs on all alike)",
    )
    parser.add_argument(
        "--census", action="store_true", help="what moves to the oldest generation, by type"
    )
    parser.add_argument("--before", help="where the `before` arm imports litellm_reasoning from")
    args = parser.parse_args()
    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    if "before" in arms and not args.before:
        parser.error("the `before` arm needs --before DIR")
    prefix = f"bench-diag-{uuid.uuid4().hex[:8]}:"
    store_url = f"{sec_workers.REDIS}?prefix={prefix}&max_records=1000000"
    model = sec_workers.MODEL
    with (
        upstream_process({model.split("/", 1)[1]: sec_workers.REPLY}, report=True) as base_url,
        tempfile.TemporaryDirectory(prefix="bench-diag-") as tmp,
    ):
        model_list = sec_workers.agent_model_list(base_url)
        probe_dir = Path(tmp) / "gc"
        probe_dir.mkdir()
        specs: dict[str, ProxyProcess] = {}
        for name in sorted({PROXY_OF[arm] for arm in arms}):
            config: dict[str, Any] = {"model_list": model_list}
            if CALLBACK_OF[name] is not None:
                config["litellm_settings"] = {"callbacks": CALLBACK_OF[name]}
            # The `before` arm's package first: found before the installed one.
            earlier = f"{Path(args.before).resolve()}:" if name == "before" else ""
            env = {
                "PYTHONPATH": f"{earlier}{HERE / 'gc_probe'}:{HERE}",
                "GC_PROBE_DIR": str(probe_dir),
                "GC_PROBE_ARM": name,
                "LITELLM_REASONING_STORE": store_url,
                "GC_PROBE_CENSUS": "1" if args.census else "0",
            }
            specs[name] = ProxyProcess(config, Path(tmp) / name, env=env, num_workers=args.workers)
        try:
            with proxies(specs, timeout=600.0) as running:
                started = _collections(probe_dir)  # startup's collections, left out
                promoted_at_start = _promoted(probe_dir)
                results = sec_workers._measure(
                    running,
                    args.history,
                    args.clients,
                    args.seconds,
                    args.rounds,
                    store_url,
                    arms=arms,
                    proxy_of=PROXY_OF,
                    keeping=KEEPING,
                    primed=PRIMED,
                    together=args.together,
                    settle=args.settle,
                )
        finally:
            sec_workers._forget(prefix)
        _print(results, arms, _collections(probe_dir, started))
        _print_timed(probe_dir, results)
        if args.census:
            _print_promoted(results, arms, _promoted(probe_dir, promoted_at_start))


def _probes(probe_dir: Path, arm: str = "*") -> Iterator[tuple[str, dict[str, Any]]]:
    """(proxy, figures) of each worker's probe file (`gc_probe`), as last written."""
    for path in probe_dir.glob(f"{arm}-*.json"):
        yield path.stem.rsplit("-", 1)[0], json.loads(path.read_text())


def _served(results: dict[str, dict[str, Any]], arms: tuple[str, ...]) -> dict[str, int]:
    """Requests each proxy served over the arms it ran."""
    served: dict[str, int] = {}
    for arm in arms:
        served[PROXY_OF[arm]] = served.get(PROXY_OF[arm], 0) + results[arm]["ok"]
    return served


def _promoted(
    probe_dir: Path, since: dict[str, Counter[str]] | None = None
) -> dict[str, Counter[str]]:
    """Per proxy: what its workers' collector moved to the oldest generation, by type, minus
    `since`."""
    out: dict[str, Counter[str]] = {}
    for proxy, stats in _probes(probe_dir):
        out.setdefault(proxy, Counter()).update(stats.get("promoted", {}))
    for proxy, start in (since or {}).items():
        out[proxy] = out.get(proxy, Counter()) - start
    return out


def _print_promoted(
    results: dict[str, dict[str, Any]], arms: tuple[str, ...], promoted: dict[str, Counter[str]]
) -> None:
    served = _served(results, arms)
    for proxy, kinds in sorted(promoted.items()):
        per_request = max(served.get(proxy, 0), 1)
        top = ", ".join(f"{kind} {n / per_request:.1f}" for kind, n in kinds.most_common(30))
        print(f"proxy {proxy}: moved to the oldest generation per request: {top}")


def _print_timed(probe_dir: Path, results: dict[str, dict[str, Any]]) -> None:
    """The `timed` arm: per wrapped function, calls and thread CPU per request, summed over the
    workers (their warm-up requests included), and how much of it was the garbage collector
    (collections that began while the function ran)."""
    totals: dict[str, list[float]] = {}
    for _, stats in _probes(probe_dir, "timed"):
        for label, (calls, seconds, collecting) in stats.get("timed", {}).items():
            figures = totals.setdefault(label, [0.0, 0.0, 0.0])
            figures[0] += calls
            figures[1] += seconds
            figures[2] += collecting
    served = max(results.get("timed", {}).get("ok", 0), 1)
    for label, (calls, seconds, collecting) in sorted(totals.items()):
        print(
            f"timed {label}: {calls / served:.2f} calls and {1000 * seconds / served:.3f} ms "
            f"of thread CPU per request, {1000 * collecting / served:.3f} of it collecting"
        )


def _collections(
    probe_dir: Path, since: dict[str, list[float]] | None = None
) -> dict[str, list[float]]:
    """Per proxy: its `FIGURES`, summed over its workers as their probes last wrote them (after
    a full collection, and at exit), minus `since`."""
    out: dict[str, list[float]] = {}
    for proxy, stats in _probes(probe_dir):
        before = out.get(proxy, [0.0] * FIGURES)
        figures = (
            stats["collections"]
            + stats["seconds"]
            + stats.get("decoded", [0, 0])
            + [stats.get("restored", 0)]
        )
        out[proxy] = [a + b for a, b in zip(before, figures, strict=True)]
    for proxy, start in (since or {}).items():
        out[proxy] = [a - b for a, b in zip(out.get(proxy, [0.0] * FIGURES), start, strict=True)]
    return out


def _print(
    results: dict[str, dict[str, Any]],
    arms: tuple[str, ...],
    collections: dict[str, list[float]],
) -> None:
    for arm in arms:
        r = results[arm]
        ok = max(r["ok"], 1)
        rounds = ", ".join(f"{1000 * x:.1f}" for x in r["rounds"])
        print(
            f"{arm}: CPU per request {1000 * r['cpu'] / ok:.2f} ms (rounds {rounds}); "
            f"{r['ok']} requests, {r['err']} errors; "
            f"{r['carried']} of {r['sent']} assistant messages with reasoning on the wire"
        )
    for proxy, served in sorted(_served(results, arms).items()):
        totals = collections.get(proxy, [0.0] * FIGURES)
        counts, seconds, (hits, misses, restored) = totals[:3], totals[3:6], totals[6:]
        per_request = max(served, 1)
        per = ", ".join(
            f"gen{g} {counts[g] / per_request:.2f} ({1000 * seconds[g] / per_request:.2f} ms)"
            for g in range(3)
        )
        print(
            f"proxy {proxy}: collections per request {per}; requests per full collection "
            f"{served / max(counts[2], 1):.1f} (after startup; each worker's warm-up included)"
        )
        if hits or misses:
            print(
                f"proxy {proxy}: decoded records per request: {hits / per_request:.1f} "
                f"from the cache, {misses / per_request:.1f} decoded anew"
            )
        if restored:  # the callback's own count, beside what the local server saw arrive
            print(
                f"proxy {proxy}: restored per request (the callback's count) "
                f"{restored / per_request:.1f}"
            )


if __name__ == "__main__":
    main()
