"""Benchmark litellm-reasoning: its cost against its floor and against LiteLLM, and what it saves.

    LITELLM_LOCAL_MODEL_COST_MAP=True python bench/run.py            # full run, ~4 minutes
    python bench/run.py --quick --out /tmp/results.md                # smoke run (CI), tiny sizes

Writes the report (machine, headline table, one section per measure) to `bench/results.md`
(or `--out`) and, for a full run to the default file, the headline table into
`bench/README.md`. See `bench/README.md` for what each section measures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Section, machine

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results.md"
README = HERE / "README.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
SECTIONS = (
    "rewrite",
    "e2e",
    "stores",
    "proxy",
    "workers",
    "gateway",
    "saturation",
    "tokens",
    "profile",
)


@dataclass(frozen=True)
class Sizes:
    rewrite_sizes: list[int]
    rewrite_budget: float
    rewrite_min_repeat: int
    e2e_history: int
    e2e_repeat: int
    store_counts: list[int]
    store_repeat: int
    proxy_concurrency: int
    proxy_seconds: float
    proxy_rounds: int
    workers: int
    workers_history: int
    workers_clients: int
    workers_seconds: float
    workers_rounds: int
    gateway_levels: list[int]
    gateway_history: int
    gateway_steps: int
    gateway_seconds: float
    gateway_rounds: int
    saturation_agents: int
    saturation_steps: int
    token_turns: int
    profile_size: int
    profile_reps: int
    profile_e2e_reps: int


FULL = Sizes(
    rewrite_sizes=[100, 1000, 5000],
    rewrite_budget=6.0,
    rewrite_min_repeat=7,
    e2e_history=100,
    e2e_repeat=150,
    store_counts=[1, 10, 100],
    store_repeat=200,
    proxy_concurrency=8,
    proxy_seconds=5.0,
    proxy_rounds=4,
    workers=4,
    workers_history=1000,
    workers_clients=8,
    # Long: one full garbage collection of a LiteLLM worker (0.35-0.55 s here) moved the
    # ratio of 2 rounds of 10 s by 10-20%.
    workers_seconds=30.0,
    workers_rounds=4,
    gateway_levels=[1, 4, 16, 64],
    gateway_history=100,
    gateway_steps=20,
    gateway_seconds=120.0,
    gateway_rounds=3,
    saturation_agents=64,
    saturation_steps=40,
    token_turns=12,
    profile_size=1000,
    profile_reps=30,
    profile_e2e_reps=40,
)
QUICK = Sizes(
    rewrite_sizes=[20, 60],
    rewrite_budget=0.2,
    rewrite_min_repeat=3,
    e2e_history=10,
    e2e_repeat=3,
    store_counts=[1, 3],
    store_repeat=3,
    proxy_concurrency=2,
    proxy_seconds=0.5,
    proxy_rounds=1,
    workers=1,
    workers_history=20,
    workers_clients=2,
    workers_seconds=0.5,
    workers_rounds=1,
    gateway_levels=[1, 2],
    gateway_history=10,
    gateway_steps=2,
    gateway_seconds=5.0,
    gateway_rounds=1,
    saturation_agents=2,
    saturation_steps=2,
    token_turns=2,
    profile_size=50,
    profile_reps=3,
    profile_e2e_reps=3,
)


def _runners(s: Sizes, out_dir: Path) -> dict[str, Callable[[], Section]]:
    import sec_e2e
    import sec_gateway
    import sec_profile
    import sec_proxy
    import sec_rewrite
    import sec_saturation
    import sec_stores
    import sec_tokens
    import sec_workers

    return {
        "rewrite": lambda: sec_rewrite.run(
            s.rewrite_sizes, s.rewrite_budget, s.rewrite_min_repeat, out_dir
        ),
        "e2e": lambda: sec_e2e.run(s.e2e_history, s.e2e_repeat),
        "stores": lambda: sec_stores.run(s.store_counts, s.store_repeat),
        "proxy": lambda: sec_proxy.run(s.proxy_concurrency, s.proxy_seconds, s.proxy_rounds),
        "workers": lambda: sec_workers.run(
            s.workers, s.workers_history, s.workers_clients, s.workers_seconds, s.workers_rounds
        ),
        "gateway": lambda: sec_gateway.run(
            s.workers,
            s.gateway_levels,
            s.gateway_history,
            s.gateway_steps,
            s.gateway_seconds,
            s.gateway_rounds,
        ),
        "saturation": lambda: sec_saturation.run(
            s.workers, s.saturation_agents, s.saturation_steps
        ),
        "tokens": lambda: sec_tokens.run(s.token_turns),
        "profile": lambda: sec_profile.run(
            out_dir, s.profile_size, s.profile_reps, s.profile_e2e_reps
        ),
    }


def headline(sections: list[Section]) -> str:
    lines = ["| measure | value | goal | verdict |", "| --- | --- | --- | --- |"]
    for section in sections:
        lines += [f"| {m} | {v} | {g} | {ok} |" for m, v, g, ok in section.summary]
    return "\n".join(lines)


def report(sections: list[Section], facts: dict[str, str], command: str, quick: bool) -> str:
    out = [
        "# litellm-reasoning benchmark results",
        "",
        f"Command: `{command}`" + (" (QUICK smoke sizes: numbers mean nothing)" if quick else ""),
        "",
        "| machine | |",
        "| --- | --- |",
        *(f"| {k} | {v} |" for k, v in facts.items()),
        "",
        "## Headline",
        "",
        headline(sections),
        "",
    ]
    out += [s.markdown() for s in sections]
    return "\n".join(out)


def update_readme(table: str, facts: dict[str, str]) -> None:
    if not README.exists():
        return
    text = README.read_text()
    if START not in text or END not in text:
        return
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    stamp = (
        f"_{facts['date']}, {facts['nproc']} CPUs ({facts['cpu']}), load "
        f"{facts['load average at start']}, python {facts['python']}, litellm "
        f"{facts['litellm']}; details in [results.md](results.md)._"
    )
    README.write_text(f"{head}{START}\n{stamp}\n\n{table}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks it runs (CI)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="report file (markdown)")
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)}",
    )
    parser.add_argument("--no-readme", action="store_true", help="leave bench/README.md alone")
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(wanted) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")

    import logging

    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    facts = machine()
    print("machine: " + "; ".join(f"{k}={v}" for k, v in facts.items()), flush=True)
    sizes = QUICK if args.quick else FULL
    out: Path = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    runners = _runners(sizes, out.parent)
    sections: list[Section] = []
    failed: list[str] = []
    started = time.perf_counter()
    for name in wanted:
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        try:
            section = runners[name]()
        except Exception as exc:
            failed.append(name)
            section = Section(name, f"{name}: FAILED")
            section.lines.append(f"```\n{traceback.format_exc()}```")
            section.summary.append((name, "FAILED", "—", f"{type(exc).__name__}: {exc}"))
            traceback.print_exc()
        section.notes.append(f"section time: {time.perf_counter() - t0:.1f} s")
        sections.append(section)
    facts["total time"] = f"{time.perf_counter() - started:.0f} s"
    command = "python bench/run.py" + (" " + " ".join(argv or sys.argv[1:])).rstrip()
    out.write_text(report(sections, facts, command.strip(), args.quick))
    table = headline(sections)
    print("\n" + table + "\n", flush=True)
    print(f"wrote {out}", flush=True)
    if not args.quick and not args.no_readme and out == DEFAULT_OUT and not failed:
        update_readme(table, facts)
        print(f"updated {README}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
