"""Stores by URL.

* `memory://?max_records=N&max_bytes=N&ttl=SECONDS`: in-process (the SDK default);
* `sqlite:///relative/file.db`, `sqlite:////absolute/file.db`: one file shared by the worker
  processes of one machine (the proxy default), `?ttl=&max_records=&max_bytes=&timeout=`
  `&required_timeout=`;
* `redis://[:password@]host:port/db` (`rediss://` for TLS): shared by every replica,
  `?ttl=&max_records=` (per tenant) `&timeout=&required_timeout=&prefix=&read_bytes=` (what one
  read round trip brings, default 1 MiB); other query options go to redis-py;
* `redis+cluster://[:password@]host:port,host:port/` (`rediss+cluster://`): Redis Cluster,
  Valkey, ElastiCache / MemoryStore in cluster mode, from any startup nodes;
* `redis+sentinel://[:password@]host:port,host:port/service[/db]`: the primary Sentinel names
  (`&wait_replicas=1&wait_seconds=0.1`: each write confirmed by that many replicas within that
  time, else kept and written again: a failover loses no record; `wait_replicas=0`: off);
* `litellm://`: the Redis LiteLLM itself is configured with, from the environment variables its
  cache and router read (`REDIS_CLUSTER_NODES`, `REDIS_SENTINEL_NODES` + `REDIS_SERVICE_NAME`,
  `REDIS_URL`, or `REDIS_HOST` / `REDIS_PORT` / `REDIS_USERNAME` / `REDIS_PASSWORD` /
  `REDIS_SSL`), with this URL's own options (`litellm://?prefix=…&ttl=…`).

Every URL also takes `max_record_bytes`. SQLite and Redis stores come wrapped in
`ResilientStore` (`?local_records=N` bounds its in-memory layer, `?retry=SECONDS` how often a
down backend is probed); `open_backend` gives the bare backend (what the operator CLI uses).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlparse, urlunparse

from ..core.spelling import did_you_mean
from ._base import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_TTL_SECONDS,
    LocalAnswer,
    ReasoningStore,
    StoredRecord,
    StoreUnsupported,
    TenantStats,
    scope_id,
)
from .memory import DEFAULT_MAX_BYTES, MemoryStore
from .resilient import ResilientStore

LOCAL_MAX_BYTES = 64 * 1024 * 1024
"""What the fail-open layer holds at most while its backend is down."""

SUPPORTED = (
    "memory://, sqlite:///path/to/file.db, redis://host:port/db (rediss:// for TLS), "
    "redis+cluster://host:port,host:port/, redis+sentinel://host:port/service/db, litellm://"
)
_REDIS_SCHEMES = {
    f"{tls}{mode}": "redis" for tls in ("redis", "rediss") for mode in ("", "+cluster", "+sentinel")
}

_COMMON = {"ttl", "max_record_bytes"}
_WRAPPER = {"local_records", "retry"}
_OPTIONS = {
    "memory": _COMMON | {"max_records", "max_bytes"},
    "sqlite": _COMMON | _WRAPPER | {"max_records", "max_bytes", "timeout", "required_timeout"},
    "redis": _COMMON
    | _WRAPPER
    | {
        "max_records",
        "timeout",
        "required_timeout",
        "prefix",
        "read_bytes",
        "wait_replicas",
        "wait_seconds",
    },
}


def default_store_url() -> str:
    """The proxy's default: a SQLite file in the user's data directory
    (`$XDG_DATA_HOME/litellm-reasoning/reasoning.db`, else `~/.local/share/…`)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path("~/.local/share").expanduser())
    return f"sqlite:///{Path(base) / 'litellm-reasoning' / 'reasoning.db'}"


def litellm_redis_url(env: Mapping[str, str] | None = None) -> str:
    """The store URL of the Redis LiteLLM is configured with (its environment variables)."""
    env = os.environ if env is None else env
    tls = str(env.get("REDIS_SSL", "")).lower() in ("1", "true", "yes")
    scheme = "rediss" if tls else "redis"
    username, password = env.get("REDIS_USERNAME") or "", env.get("REDIS_PASSWORD") or ""
    auth = f"{quote(username, safe='')}:{quote(password, safe='')}@" if username or password else ""
    if env.get("REDIS_CLUSTER_NODES"):
        nodes = json.loads(env["REDIS_CLUSTER_NODES"])
        hosts = ",".join(f"{n['host']}:{n.get('port', 6379)}" for n in nodes)
        return f"{scheme}+cluster://{auth}{hosts}/"
    if env.get("REDIS_SENTINEL_NODES"):
        nodes = json.loads(env["REDIS_SENTINEL_NODES"])
        hosts = ",".join(f"{host}:{port}" for host, port in nodes)
        return f"{scheme}+sentinel://{auth}{hosts}/{env.get('REDIS_SERVICE_NAME') or 'mymaster'}"
    if env.get("REDIS_URL"):
        return env["REDIS_URL"]
    if env.get("REDIS_HOST"):
        return f"{scheme}://{auth}{env['REDIS_HOST']}:{env.get('REDIS_PORT') or 6379}/0"
    raise ValueError(
        "reasoning store litellm:// reuses LiteLLM's Redis settings, and none is set "
        "(REDIS_HOST, REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINEL_NODES)"
    )


def _resolve(url: str) -> str:
    """`litellm://?options` as the URL of LiteLLM's Redis with those options."""
    if not url.startswith("litellm://"):
        return url
    base = urlparse(litellm_redis_url())
    extra = urlparse(url).query
    query = "&".join(part for part in (base.query, extra) if part)
    return urlunparse(base._replace(query=query))


def _split(url: str) -> tuple[str, Any, dict[str, str], dict[str, str]]:
    """(kind, parsed URL, our options, other query options)."""
    parsed = urlparse(_resolve(url))
    kind = {**_REDIS_SCHEMES, "unix": "redis"}.get(parsed.scheme, parsed.scheme)
    if kind not in _OPTIONS:
        raise ValueError(f"unsupported reasoning store URL {url!r}; supported: {SUPPORTED}")
    ours: dict[str, str] = {}
    others: dict[str, str] = {}
    for name, value in parse_qsl(parsed.query, keep_blank_values=True):
        (ours if name in _OPTIONS[kind] else others)[name] = value
    if others and (kind != "redis" or "+" in parsed.scheme):
        raise ValueError(
            f"unknown option(s) {sorted(others)} in reasoning store URL {url!r}; "
            f"{kind} takes {sorted(_OPTIONS[kind])}"
        )
    if others:
        _check_redis_options(url, others, _OPTIONS[kind])
    if kind == "sqlite" and (parsed.netloc + parsed.path) and not url.startswith("sqlite:///"):
        raise ValueError(
            f"reasoning store URL {url!r} is not sqlite:///relative/file.db or "
            "sqlite:////absolute/file.db (three slashes, a fourth for an absolute path)"
        )
    return kind, parsed, ours, others


def _check_redis_options(url: str, others: Mapping[str, str], ours: set[str]) -> None:
    """Every option that goes to redis-py is one it takes, with a value its URL parser reads:
    a typo (`tll=60`) would otherwise fail every write inside redis-py, long after startup."""
    try:
        import redis.connection as connection
    except ImportError:  # the store cannot open anyway: `RedisStore` says so
        return
    import inspect

    accepted = set(getattr(connection, "URL_QUERY_ARGUMENT_PARSERS", {}))
    for kind in (connection.AbstractConnection, connection.Connection, connection.ConnectionPool):
        accepted.update(inspect.signature(kind.__init__).parameters)
    accepted -= {"self", "args", "kwargs", "connection_class", "host", "port", "password"}
    for name in others:
        if name not in accepted:
            hint = did_you_mean(name, sorted(ours | accepted))
            raise ValueError(
                f"unknown option {name!r} in reasoning store URL {url!r}{hint}; this package "
                f"takes {sorted(ours)}, other options go to redis-py"
            )
    parse = getattr(connection, "parse_url", None)
    if parse is not None:
        try:
            parse(urlunparse(urlparse(url)._replace(query=urlencode(others))))
        except ValueError as exc:
            raise ValueError(f"reasoning store URL {url!r}: {exc}") from None


def _number(options: dict[str, str], name: str, default: float) -> float:
    try:
        value = float(options.get(name, default))
    except ValueError:
        raise ValueError(
            f"reasoning store option {name}={options[name]!r} is not a number"
        ) from None
    if value <= 0:
        raise ValueError(f"reasoning store option {name} must be positive, not {value}")
    return value


def _replicas(options: dict[str, str]) -> int:
    """`wait_replicas` (0 turns Sentinel's `WAIT` off)."""
    value = options.get("wait_replicas", "1")
    if not value.isdigit():
        raise ValueError(f"reasoning store option wait_replicas={value!r} is not a count")
    return int(value)


def _common(options: dict[str, str]) -> dict[str, Any]:
    return {
        "ttl_seconds": _number(options, "ttl", DEFAULT_TTL_SECONDS),
        "max_record_bytes": int(_number(options, "max_record_bytes", DEFAULT_MAX_RECORD_BYTES)),
    }


def _display(kind: str, parsed: Any) -> str:
    """The URL without password or options, for logs."""
    if kind == "sqlite":
        return f"sqlite://{parsed.path}"
    if "+" in parsed.scheme:
        return f"{parsed.scheme}://{parsed.netloc.rpartition('@')[2]}{parsed.path}"
    host = parsed.hostname or ""
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path}"


def open_backend(url: str) -> ReasoningStore:
    """The bare store for `url`: errors raise (no local layer, no breaker)."""
    kind, parsed, options, others = _split(url)
    common = _common(options)
    if kind == "memory":
        return MemoryStore(
            max_records=int(_number(options, "max_records", 50_000)),
            max_bytes=int(_number(options, "max_bytes", DEFAULT_MAX_BYTES)),
            **common,
        )
    if kind == "sqlite":
        from .sqlite import SqliteStore

        path = parsed.netloc + parsed.path
        path = path[1:] if path.startswith("/") else path
        if not path:
            raise ValueError(f"reasoning store URL {url!r} names no file: sqlite:///path/file.db")
        return SqliteStore(
            path,
            max_records=int(_number(options, "max_records", 200_000)),
            max_bytes=int(_number(options, "max_bytes", 1024**3)),
            timeout=_number(options, "timeout", 0.5),
            required_timeout=_number(options, "required_timeout", 2.0),
            **common,
        )
    from .redis import DEFAULT_PREFIX, DEFAULT_READ_BYTES, RedisStore

    return RedisStore(
        urlunparse(parsed._replace(query=urlencode(others))),
        prefix=options.get("prefix", DEFAULT_PREFIX),
        max_records=int(_number(options, "max_records", 10_000)),
        timeout=_number(options, "timeout", 0.2),
        required_timeout=_number(options, "required_timeout", 2.0),
        read_bytes=int(_number(options, "read_bytes", DEFAULT_READ_BYTES)),
        wait_replicas=_replicas(options),
        wait_seconds=_number(options, "wait_seconds", 0.1),
        **common,
    )


def check_store_url(url: str) -> None:
    """Raise ValueError naming what is wrong with `url` (scheme, options), opening nothing."""
    kind, parsed, options, _ = _split(url)
    _common(options)
    for name in (
        "max_records",
        "max_bytes",
        "timeout",
        "required_timeout",
        "local_records",
        "retry",
        "read_bytes",
        "wait_seconds",
    ):
        if name in options:
            _number(options, name, 1)
    _replicas(options)
    if kind == "sqlite" and not (parsed.netloc + parsed.path).lstrip("/"):
        raise ValueError(f"reasoning store URL {url!r} names no file: sqlite:///path/file.db")


def store_from_url(url: str) -> ReasoningStore:
    """The store for `url`; SQLite and Redis come behind a `ResilientStore` (never raises)."""
    backend = open_backend(url)
    if not backend.persistent:  # lives in this process: nothing to fail over from
        return backend
    backend.open_now()
    kind, parsed, options, _ = _split(url)
    local = MemoryStore(
        max_records=int(_number(options, "local_records", 10_000)),
        max_bytes=LOCAL_MAX_BYTES,
        **_common(options),
    )
    return ResilientStore(
        backend,
        local=local,
        retry_seconds=_number(options, "retry", 2.0),
        name=_display(kind, parsed),
    )


__all__ = [
    "SUPPORTED",
    "LocalAnswer",
    "MemoryStore",
    "ReasoningStore",
    "ResilientStore",
    "StoreUnsupported",
    "StoredRecord",
    "TenantStats",
    "check_store_url",
    "default_store_url",
    "litellm_redis_url",
    "open_backend",
    "scope_id",
    "store_from_url",
]
