"""`litellm-reasoning store stats|show|purge`: look into and prune a persistent reasoning store.

The store URL comes from `--store URL`, else `LITELLM_REASONING_STORE`, else the proxy's default
SQLite file. Reasoning text is shown as a short preview unless `--full`; signatures and opaque
data only by length. `--json` prints machine-readable output (same previews).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlparse

from ..stores import StoredRecord, StoreUnsupported, TenantStats, default_store_url, open_backend

ENV = "LITELLM_REASONING_STORE"
PREVIEW = 80


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser
) -> None:
    """The `store` subcommand (wired into `litellm-reasoning`); `shared`: the options every
    command takes anywhere (`--json`, `--store`)."""
    store = commands.add_parser(
        "store",
        parents=[shared],
        help="inspect or purge a persistent reasoning store (SQLite, Redis)",
    )
    actions = store.add_subparsers(dest="action", required=True)
    actions.add_parser(
        "stats", parents=[shared], help="records, bytes, oldest and newest per tenant"
    )
    show = actions.add_parser(
        "show", parents=[shared], help="a tenant's newest records (previews only)"
    )
    show.add_argument("tenant", help="the tenant: its scope string or its scope id")
    show.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    show.add_argument("--full", action="store_true", help="print reasoning text in full")
    purge = actions.add_parser(
        "purge", parents=[shared], help="remove records by tenant and/or age"
    )
    purge.add_argument("--tenant", metavar="SCOPE", help="only this tenant (scope or scope id)")
    purge.add_argument(
        "--older-than", metavar="SECONDS", type=float, help="only records older than this"
    )
    purge.add_argument("--all", action="store_true", help="every record of every tenant")
    purge.add_argument("--yes", action="store_true", help="do not ask before purging everything")


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


def print_stats(
    url: str, tenants: list[TenantStats], out: TextIO, caps: dict[str, Any] | None = None
) -> None:
    print(f"store: {url}", file=out)
    if caps:
        bounds = [f"{k} {v}" for k in ("max_records", "max_bytes") if (v := caps.get(k))]
        print(f"caps: {', '.join(bounds) or 'per tenant'}; {caps.get('per_tenant')}", file=out)
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


def _json_records(records: list[StoredRecord], full: bool) -> list[dict[str, Any]]:
    out = []
    for r in records:
        parts = []
        for part in r.record.parts if r.record is not None else ():
            parts.append(
                {
                    "kind": part.kind,
                    "text_chars": len(part.text),
                    "text": _preview(part.text, full),
                    "signature_chars": len(part.signature or ""),
                    "data_chars": len(part.data or ""),
                }
            )
        out.append(
            {
                "key": r.key,
                "size": r.size,
                "created_at": r.created_at,
                "expires_at": None if r.expires_at == float("inf") else r.expires_at,
                "readable": r.record is not None,
                "provider": r.record.provider if r.record else None,
                "model": r.record.model if r.record else None,
                "parts": parts,
            }
        )
    return out


def _shown(url: str) -> str:
    """`url` with any password masked (what is printed)."""
    parsed = urlparse(url)
    credentials, at, hosts = parsed.netloc.rpartition("@")
    if not at or ":" not in credentials:
        return url
    user = credentials.split(":", 1)[0]
    return parsed._replace(netloc=f"{user}:***@{hosts}").geturl()


def _problem(args: argparse.Namespace, url: str) -> str | None:
    """What makes the command unsafe or meaningless before any store is opened."""
    if args.action == "purge" and args.older_than is not None and args.older_than < 0:
        return f"--older-than must be 0 or more seconds, not {args.older_than:g}"
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        path = (parsed.netloc + parsed.path)[1:] if parsed.path.startswith("/") else parsed.path
        if path and not Path(path).exists():
            # Opening would create an empty database and report "no records".
            return f"no SQLite store at {path} (check --store / ${ENV})"
    return None


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    url = args.store or os.environ.get(ENV) or default_store_url()
    problem = _problem(args, url)
    if problem is not None:
        print(f"litellm-reasoning store: {problem}", file=sys.stderr)
        return 2
    if args.action == "purge" and args.all and not args.yes:
        if not sys.stdin.isatty():
            print("litellm-reasoning store purge --all: add --yes to confirm", file=sys.stderr)
            return 2
        answer = input(f"Remove every record of every tenant in {url}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing removed", file=out)
            return 1
    try:
        store = open_backend(url)
    except (ValueError, ImportError) as exc:
        print(f"litellm-reasoning store: {exc}", file=sys.stderr)
        return 2
    if not store.persistent:
        print(
            "litellm-reasoning store: a memory:// store lives inside its process; "
            "there is nothing to inspect from here",
            file=sys.stderr,
        )
        return 2
    try:
        with store:
            if args.action == "stats":
                tenants = store.tenants()
                caps = store.caps()
                if args.json:
                    rows = [dataclasses.asdict(t) for t in tenants]
                    shown = {"store": _shown(url), "caps": caps, "tenants": rows}
                    print(json.dumps(shown), file=out)
                else:
                    print_stats(_shown(url), tenants, out, caps)
            elif args.action == "show":
                records = store.list_records(args.tenant, limit=args.limit)
                if args.json:
                    found = _json_records(records, args.full)
                    print(json.dumps({"tenant": args.tenant, "records": found}), file=out)
                elif records:
                    print_records(records, args.full, out)
                else:
                    print(f"no records for tenant {args.tenant!r}", file=out)
                if not records:
                    return 1
            else:
                if args.tenant is None and args.older_than is None and not args.all:
                    print(
                        "litellm-reasoning store purge: give --tenant, --older-than or --all",
                        file=sys.stderr,
                    )
                    return 2
                removed = store.purge(scope=args.tenant, older_than=args.older_than)
                if args.json:
                    done = {
                        "store": _shown(url),
                        "removed": removed,
                        "tenant": args.tenant,
                        "older_than": args.older_than,
                    }
                    print(json.dumps(done), file=out)
                    return 0
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
