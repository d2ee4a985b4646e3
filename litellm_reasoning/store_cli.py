"""`litellm-reasoning store stats|show|purge`: look into and prune a persistent reasoning store.

The store URL comes from `--store URL` or `LITELLM_REASONING_STORE`. Reasoning text is shown as a
short preview unless `--full`; signatures and opaque data only by length.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime
from typing import TextIO

from .stores import StoredRecord, StoreUnsupported, TenantStats, open_backend
from .stores.memory import MemoryStore

ENV = "LITELLM_REASONING_STORE"
PREVIEW = 80


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `store` subcommand (wired into `litellm-reasoning`)."""
    store = commands.add_parser(
        "store", help="inspect or purge a persistent reasoning store (SQLite, Redis)"
    )
    store.add_argument("--store", metavar="URL", help=f"store URL (default: ${ENV})")
    actions = store.add_subparsers(dest="action", required=True)
    actions.add_parser("stats", help="records, bytes, oldest and newest per tenant")
    show = actions.add_parser("show", help="a tenant's newest records (previews only)")
    show.add_argument("tenant", help="the tenant: its scope string or its scope id")
    show.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    show.add_argument("--full", action="store_true", help="print reasoning text in full")
    purge = actions.add_parser("purge", help="remove records by tenant and/or age")
    purge.add_argument("--tenant", metavar="SCOPE", help="only this tenant (scope or scope id)")
    purge.add_argument(
        "--older-than", metavar="SECONDS", type=float, help="only records older than this"
    )
    purge.add_argument("--all", action="store_true", help="every record of every tenant")


def _when(ts: float | None) -> str:
    """`2026-01-02T03:04:05+00:00 (5m ago)`, or `(in 23h)` for a time to come."""
    if ts is None:
        return "-"
    if ts == float("inf"):
        return "never"
    delta = ts - time.time()
    age = abs(delta)
    unit, span = next(
        ((u, s) for u, s in (("d", 86400), ("h", 3600), ("m", 60)) if age >= s), ("s", 1)
    )
    stamp = datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")
    amount = f"{age / span:.0f}{unit}"
    return f"{stamp} ({'in ' + amount if delta > 0.5 else amount + ' ago'})"


def _preview(text: str, full: bool) -> str:
    text = text.replace("\n", " ")
    return text if full or len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def print_stats(url: str, tenants: list[TenantStats], out: TextIO) -> None:
    print(f"store: {url}", file=out)
    if not tenants:
        print("no records", file=out)
        return
    for t in tenants:
        print(f"tenant {t.scope_id}  {t.scope}", file=out)
        print(f"  records: {t.records}   bytes: {t.bytes}", file=out)
        print(f"  oldest:  {_when(t.oldest)}", file=out)
        print(f"  newest:  {_when(t.newest)}", file=out)
    total = sum(t.records for t in tenants)
    size = sum(t.bytes for t in tenants)
    oldest = min((t.oldest for t in tenants if t.oldest is not None), default=None)
    newest = max((t.newest for t in tenants if t.newest is not None), default=None)
    print(f"total: {len(tenants)} tenant(s), {total} record(s), {size} bytes", file=out)
    print(f"oldest: {_when(oldest)}   newest: {_when(newest)}", file=out)


def print_records(records: list[StoredRecord], full: bool, out: TextIO) -> None:
    for r in records:
        print(f"key {r.key}  ({r.size} bytes)", file=out)
        print(f"  written: {_when(r.created_at)}   expires: {_when(r.expires_at)}", file=out)
        if r.record is None:
            print("  (unreadable: another schema version, or damaged)", file=out)
            continue
        print(f"  provider: {r.record.provider or '-'}   model: {r.record.model or '-'}", file=out)
        for i, part in enumerate(r.record.parts):
            extras = [
                f"{name} {len(value)} chars"
                for name, value in (("signature", part.signature), ("data", part.data))
                if value is not None
            ]
            line = f"  [{i}] {part.kind}"
            if part.text:
                line += f" {len(part.text)} chars: {_preview(part.text, full)!r}"
            if extras:
                line += "; " + ", ".join(extras)
            print(line, file=out)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    url = args.store or os.environ.get(ENV)
    if not url:
        print(f"litellm-reasoning store: give --store URL or set {ENV}", file=sys.stderr)
        return 2
    try:
        store = open_backend(url)
    except (ValueError, ImportError) as exc:
        print(f"litellm-reasoning store: {exc}", file=sys.stderr)
        return 2
    if isinstance(store, MemoryStore):
        print(
            "litellm-reasoning store: a memory:// store lives inside its process; "
            "there is nothing to inspect from here",
            file=sys.stderr,
        )
        return 2
    try:
        with store:
            if args.action == "stats":
                print_stats(url, store.tenants(), out)
            elif args.action == "show":
                records = store.list_records(args.tenant, limit=args.limit)
                if not records:
                    print(f"no records for tenant {args.tenant!r}", file=out)
                print_records(records, args.full, out)
            else:
                if args.tenant is None and args.older_than is None and not args.all:
                    print(
                        "litellm-reasoning store purge: give --tenant, --older-than or --all",
                        file=sys.stderr,
                    )
                    return 2
                removed = store.purge(scope=args.tenant, older_than=args.older_than)
                what = f"tenant {args.tenant!r}" if args.tenant else "all tenants"
                age = f", older than {args.older_than:g} s" if args.older_than is not None else ""
                print(f"removed {removed} record(s) ({what}{age})", file=out)
    except StoreUnsupported as exc:
        print(f"litellm-reasoning store: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"litellm-reasoning store: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
