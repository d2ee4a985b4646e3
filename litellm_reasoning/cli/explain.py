"""`litellm-reasoning explain`: what the callback would do with a request, message by message.

Give it the request as a client sends it (a JSON file or `-` for stdin: a chat request body with
`model` and `messages`, or a bare message list with `--model`) and the tenant it belongs to; it
reads the store the callback uses (never writes it) and prints, for every assistant message,
whether a record is stored for it and what the request would carry: kept (the client sent it),
restored, stripped, dropped (another issuer's), missing (wanted, nobody has it) or over budget.
No provider is called. Reasoning text is shown as a short preview; signatures only by length.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any, TextIO

from ..stores import default_store_url, open_backend
from .store import ENV, PREVIEW, _shown


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser
) -> None:
    explain = commands.add_parser(
        "explain",
        parents=[shared],
        help="what the callback would do with a request: per message, stored or not, and why",
    )
    explain.add_argument("request", help="a JSON request body or message list; - for stdin")
    explain.add_argument("--model", help="the model (LiteLLM name), when the file has none")
    explain.add_argument("--namespace", default="default", help="the callback's namespace")
    explain.add_argument("--key-hash", help="the proxy's virtual key hash (user_api_key_hash)")
    explain.add_argument("--team", help="the proxy's team id")
    explain.add_argument("--user", help="the end user (`user`)")


def _load(path: str) -> Any:
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()  # noqa: SIM115
    return json.loads(text)


def _preview(value: Any) -> str:
    if isinstance(value, list):
        value = " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in value
        )
    text = " ".join(str(value or "").split())
    return text if len(text) <= PREVIEW // 2 else text[: PREVIEW // 2 - 1] + "…"


def _shape(message: Any) -> str:
    if not isinstance(message, dict):
        return "?"
    calls = message.get("tool_calls") or []
    names = [str((c.get("function") or {}).get("name", "?")) for c in calls if isinstance(c, dict)]
    text = _preview(message.get("content"))
    return (f"[calls {', '.join(names)}] " if names else "") + text


def explain(request: dict[str, Any], store_url: str, tenant: dict[str, Any]) -> dict[str, Any]:
    """The decisions for `request` against the store at `store_url`, as a JSON-able dict."""
    from ..core.limits import estimate_tokens
    from ..integration.calls import new_state
    from ..integration.engine import Engine
    from ..integration.reporting import Reporter

    # The bare backend: a store that cannot be reached is an error here (exit 1), as for
    # `store stats`, never a table of "missing" from an empty fail-open layer.
    store = open_backend(store_url)
    engine = Engine(
        store=store,
        report=Reporter(),
        namespace=tenant.pop("namespace"),
        overrides=[],
        capture_wait_seconds=0.0,
        max_reasoning_tokens=None,
        count_tokens=estimate_tokens,
        scope_from_client=True,
        legacy_keys=True,
    )
    messages = list(request["messages"])
    metadata = {
        "user_api_key_hash": tenant.get("key_hash"),
        "user_api_key_team_id": tenant.get("team"),
    }
    kwargs = {**request, "metadata": metadata, "user": tenant.get("user")}
    try:
        prepared = engine.prepare(engine.facts_of(kwargs), messages)
        # Read even when nothing is looked up (a key no record has): an unreachable store is
        # an error whatever the request.
        found = store.get_many(prepared.scope, sorted(set(prepared.keys.values())) or ["-"])
        state, _ = new_state(None)
        engine.complete(prepared, found, state)
    finally:
        store.close()
    summary = state.summary or {}
    decisions = summary.get("messages", {})
    rows = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        key = prepared.keys.get(i)
        rows.append(
            {
                "index": i,
                "role": role,
                "message": _shape(message),
                "looked_up": key is not None,
                "stored": key is not None and key in found,
                "decision": decisions.get(str(i), decisions.get(i, "")),
            }
        )
    target = prepared.target
    hint = None
    if prepared.provider is None:
        hint = (
            f"LiteLLM knows no provider for {request.get('model')!r}: a proxy model group name? "
            "Give the deployment's own model (its litellm_params.model, e.g. "
            "--model deepseek/deepseek-chat)"
        )
    return {
        "hint": hint,
        "model": request.get("model"),
        "dialect": target.dialect.name,
        "policy": target.policy.value,
        "why": target.why,
        "scope": prepared.scope,
        "counts": summary.get("counts", {}),
        "reasoning_tokens": summary.get("reasoning_tokens", {}),
        "messages": rows,
    }


def print_explained(result: dict[str, Any], out: TextIO) -> None:
    print(
        f"{result['model']}: dialect {result['dialect']}, policy {result['policy']} "
        f"({result['why']})",
        file=out,
    )
    if result.get("hint"):
        print(f"hint: {result['hint']}", file=out)
    print(f"tenant: {result['scope'] or '-'}", file=out)
    print(f"{'#':>3}  {'role':<9}  {'stored':<6}  {'decision':<15}  message", file=out)
    for row in result["messages"]:
        stored = "yes" if row["stored"] else ("no" if row["looked_up"] else "-")
        print(
            f"{row['index']:>3}  {row['role'] or '?':<9}  {stored:<6}  "
            f"{row['decision'] or '-':<15}  {row['message']}",
            file=out,
        )
    counts = ", ".join(f"{k} {v}" for k, v in result["counts"].items() if v)
    tokens = result["reasoning_tokens"]
    print(
        f"counts: {counts or 'nothing to decide'}; reasoning tokens sent "
        f"{tokens.get('sent', 0)}, saved {tokens.get('saved', 0)}",
        file=out,
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    url = args.store or os.environ.get(ENV) or default_store_url()
    try:
        loaded = _load(args.request)
    except (OSError, ValueError) as exc:
        print(f"litellm-reasoning explain: cannot read {args.request}: {exc}", file=sys.stderr)
        return 2
    request = {"messages": loaded} if isinstance(loaded, list) else loaded
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        print("litellm-reasoning explain: give a request body or a message list", file=sys.stderr)
        return 2
    if args.model:
        request["model"] = args.model
    if not request.get("model"):
        print("litellm-reasoning explain: no model (give --model)", file=sys.stderr)
        return 2
    tenant = {
        "namespace": args.namespace,
        "key_hash": args.key_hash,
        "team": args.team,
        "user": args.user,
    }
    try:
        # LiteLLM prints some findings (an unknown provider's list) on stdout: kept off the
        # command's own output, which may be JSON.
        with contextlib.redirect_stdout(sys.stderr):
            result = explain(request, url, tenant)
    except Exception as exc:
        print(f"litellm-reasoning explain: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    result["store"] = _shown(url)
    if args.json:
        print(json.dumps(result), file=out)
    else:
        print_explained(result, out)
    return 0
