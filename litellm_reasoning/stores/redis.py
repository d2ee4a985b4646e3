"""The shared store for many proxy replicas: Redis (`redis://host:port/db`, `rediss://` for TLS),
Redis Cluster / Valkey cluster (`redis+cluster://host:port,host:port/`) and a Sentinel-managed
primary (`redis+sentinel://host:port,host:port/service[/db]`).

Layout, under `prefix` (default `litellm_reasoning:`):

* `<prefix>r:<scope_id>:<key>`: one record (the JSON of `_codec`), `SET … PX ttl`, so Redis
  expires it on its own;
* `<prefix>n:<scope_id>:<key>`: the record's size (`record_size`) and byte count, written with
  it (same TTL): what a reasoning budget decides from before it reads (a record an earlier
  release wrote or rewrote has none, or one whose byte count no longer matches: unknown);
* `<prefix>i:<scope_id>`: the tenant's index, a sorted set of its record keys scored by write
  time (ms). Every write trims it: entries older than the TTL go, and beyond `max_records` the
  tenant's oldest records are deleted. The index itself expires `ttl` after the tenant's last
  write.

On a cluster the scope id is a hash tag (`<prefix>r:{<scope_id>}:<key>`, `<prefix>i:{<scope_id>}`,
the size keys alike): a tenant's records and index share one slot, so the read script and the
write script each declare keys of one slot. Standalone and Sentinel keep the layout above.

A read is one round trip per `read_bytes` (default 1 MiB) of records found, however many messages
are looked up: a Lua script reads the keys in order and stops once that many bytes are in its
reply (a long conversation restored on a worker that never saw it, 1 100 steps of 20 KB, is 22
round trips of about 1 MB, not one 22 MB reply Redis builds in memory while every other client
waits; each round trip has its own deadline). A write is one atomic Lua script (records, index,
trim), so concurrent writers of one key never leave half a record.

Bounds: TTL and the per-tenant cap (`max_records`) are enforced here; the total memory Redis
uses is bounded by the server's `maxmemory`. Redis' eviction policies evict across tenants, so
`maxmemory` must hold every tenant's cap, or one tenant's volume can push out another's records
(`open_now` warns at startup when the server evicts; every key has a TTL). Timeouts are short
(`timeout`, default 0.2 s, for connect and each reply; `required_timeout`, default 2 s, for
the reply to a read the request cannot go without) and redis-py's own retries are off:
`ResilientStore` decides what happens next.

Behind Sentinel a write is followed by `WAIT` for `wait_replicas` replicas (default 1, at most
`wait_seconds`, default 0.1 s, URL options): replication is asynchronous, and a write only the
primary held is gone once Sentinel promotes a replica. A write no replica confirmed raises
`NotReplicated`; `ResilientStore` keeps its records and writes them again, so after a failover
they reach the new primary.

Deadlines are socket timeouts, counted by the kernel on this store's own connection: the async
methods run the blocking client on a small thread pool of this store's, so an event loop busy
with other requests (a saturated proxy worker) never makes a healthy Redis look late, as an
asyncio client's timer on that loop would.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from ..core.reasoning import Reasoning
from ..core.shared_keys import exact_key, to_place
from . import _codec
from ._base import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_TTL_SECONDS,
    NotReplicated,
    ReasoningStore,
    StoredRecord,
    TenantStats,
    record_size,
    scope_id,
)
from ._threads import ProcessPool, off_loop

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError as _error:  # pragma: no cover - exercised without the extra
    redis = None  # type: ignore[assignment]
    _import_error: ImportError | None = _error
else:
    _import_error = None

DEFAULT_PREFIX = "litellm_reasoning:"

_PUT = """
-- KEYS[1]: the tenant's index; then per record (n of them), in four runs of n: its key, its
-- size key, its exact key and that one's size key (`shared_keys.exact_key`; its own two keys
-- again for a record without a conversation digest).
-- ARGV[1]: now (ms); ARGV[2]: ttl (ms); ARGV[3]: per-tenant cap; ARGV[4]: the key prefix's
-- length; then per record, in three runs of n: bodies, sizes ('<record_size>:<bytes>'), and
-- conversation digests ('' for none): `shared_keys.placement`, compared and written at once.
local index, now, ttl, cap = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local plen, n = tonumber(ARGV[4]), (#KEYS - 1) / 4
-- Something else under the index's name (damage, another program) is replaced, not an error
-- that would fail every write of the tenant and take the store down for all.
local kind = redis.call('TYPE', index)['ok']
if kind ~= 'zset' and kind ~= 'none' then
  redis.call('DEL', index)
end
local function put(key, size_key, body, size)
  redis.call('SET', key, body, 'PX', ttl)
  redis.call('SET', size_key, size, 'PX', ttl)
  redis.call('ZADD', index, now, key)
end
-- The bytes of a record with a conversation digest, that digest marked shared (`_codec`).
local function marked(body)
  return '{"c":"*' .. string.sub(body, 7)
end
local function resized(size, body)
  return (string.match(size, '^(%d+):') or '0') .. ':' .. #body
end
for i = 1, n do
  local key, size_key = KEYS[i + 1], KEYS[i + 1 + n]
  local body, size, conversation = ARGV[i + 4], ARGV[i + 4 + n], ARGV[i + 4 + 2 * n]
  if conversation ~= '' then
    local held = redis.pcall('GET', key)
    local first = type(held) == 'string' and string.match(held, '^{"c":"([^"]*)"') or nil
    if first ~= nil and first ~= conversation then
      if first == '*' .. conversation then
        body = marked(body)
        size = resized(size, body)
      else
        if string.sub(first, 1, 1) ~= '*' then
          -- a second conversation: the first one's record stays, marked shared
          local first_size = redis.pcall('GET', size_key)
          put(key, size_key, marked(held), type(first_size) == 'string'
            and resized(first_size, marked(held)) or '')
        else
          -- kept as new as the newest copy: the mark never expires or is trimmed before one
          redis.call('PEXPIRE', key, ttl)
          redis.call('PEXPIRE', size_key, ttl)
          redis.call('ZADD', index, now, key)
        end
        key, size_key = KEYS[i + 1 + 2 * n], KEYS[i + 1 + 3 * n]
      end
    end
  end
  put(key, size_key, body, size)
end
redis.call('ZREMRANGEBYSCORE', index, '-inf', now - ttl)
local excess = redis.call('ZCARD', index) - cap
if excess > 0 then
  for _, key in ipairs(redis.call('ZRANGE', index, 0, excess - 1)) do
    -- the record and its size key ('<prefix>r:…' and '<prefix>n:…')
    redis.call('UNLINK', key, string.sub(key, 1, plen) .. 'n' .. string.sub(key, plen + 2))
  end
  redis.call('ZREMRANGEBYRANK', index, 0, excess - 1)
else
  excess = 0
end
redis.call('PEXPIRE', index, ttl)
return excess
"""

_SIZES = """
-- KEYS[1..n]: record keys; KEYS[n+1..2n]: their size keys. Per record: its size as written
-- beside it, -1 when there is no record (or something else under its name), -2 when its size
-- is unknown (written by an earlier release, or rewritten by one since: the byte count
-- written with the size no longer matches the record).
local n = #KEYS / 2
local sizes = {}
for i = 1, n do
  local length = redis.pcall('STRLEN', KEYS[i])
  if type(length) ~= 'number' or length == 0 then
    sizes[i] = -1
  else
    local size, bytes = string.match(redis.pcall('GET', KEYS[n + i]) or '', '^(%d+):(%d+)$')
    if size ~= nil and tonumber(bytes) == length then
      sizes[i] = tonumber(size)
    else
      sizes[i] = -2
    end
  end
end
return sizes
"""

_CHUNK = 500

_READ = """
-- ARGV[1]: the bytes this reply may hold. `read` puts one value per key read in `values`, in
-- order ('' for a missing key, or one that is not a string), and says when the reply reached
-- the budget: the script stops after that key and the caller asks for the rest.
local budget = tonumber(ARGV[1])
local used = 0
local values = {}
local function read(i, name)
  local value = redis.pcall('GET', name)
  if type(value) == 'string' then
    values[i] = value
    used = used + #value
  else
    values[i] = ''
  end
  return used >= budget
end
"""

_GET = (
    _READ
    + """
-- KEYS: record keys in the order asked.
for i = 1, #KEYS do
  if read(i, KEYS[i]) then
    return values
  end
end
return values
"""
)

_GET_JOINED = (
    _READ
    + """
-- `_GET` of one scope's records named in one argument (the client's cost of a read is mostly
-- redis-py's handling of each argument, in Python). KEYS[1]: the scope's index, whose hash
-- slot is every record's (a cluster sends the call where they are); ARGV[2]: what every
-- record key of the scope starts with; ARGV[3]: the rest of each record key, each followed by
-- a newline, in the order asked.
local lead = ARGV[2]
local i = 0
for key in string.gmatch(ARGV[3], '([^\\n]*)\\n') do
  i = i + 1
  if read(i, lead .. key) then
    return values
  end
end
return values
"""
)

DEFAULT_READ_BYTES = 1024 * 1024
"""What one read round trip brings at most, beyond the record that reaches it."""

_THREADS = 8
"""Store calls in flight at once per process (more wait for a thread, with no deadline running)."""

T = TypeVar("T")

logger = logging.getLogger("litellm_reasoning")


def cross_tenant_eviction(memory: Any, policy: Any, per_tenant: int) -> str | None:
    """What an operator must know about a Redis whose `CONFIG GET maxmemory` /
    `maxmemory-policy` answers are `memory` / `policy` (None: nothing). A cluster answers per
    node (a dict of node -> answer): any node that evicts counts."""
    answers = list(memory.values()) if _per_node(memory) else [memory]
    policies = list(policy.values()) if _per_node(policy) else [policy]
    limits = [int(a.get("maxmemory", 0) or 0) for a in answers if isinstance(a, dict)]
    names = {str(p.get("maxmemory-policy", "")) for p in policies if isinstance(p, dict)}
    evicting = sorted(n for n in names if n and n != "noeviction")
    if not any(limits) or not evicting:
        return None
    return (
        f"Redis evicts keys of any tenant when it reaches maxmemory (maxmemory-policy "
        f"{', '.join(evicting)}): one tenant's volume can then push out another tenant's "
        f"records. Each tenant is capped here ({per_tenant} records, the store URL's "
        "max_records): give Redis a maxmemory that holds every tenant's cap (tenants x "
        "max_records x a record's size), or keep reasoning in a Redis of its own"
    )


def _per_node(answer: Any) -> bool:
    """A cluster client's answer: node -> that node's answer."""
    return (
        isinstance(answer, dict)
        and bool(answer)
        and all(isinstance(v, dict) for v in answer.values())
    )


def _nodes(netloc: str) -> tuple[str | None, str | None, list[tuple[str, int]]]:
    """(username, password, [(host, port)]) of `user:pass@h1:p1,h2:p2`."""
    credentials, _, hosts = netloc.rpartition("@")
    username, _, password = credentials.partition(":") if credentials else ("", "", "")
    nodes = []
    for host in filter(None, hosts.split(",")):
        name, _, port = host.rpartition(":") if ":" in host else (host, "", "6379")
        nodes.append((name.strip("[]"), int(port or 6379)))
    if not nodes:
        raise ValueError("a Redis Cluster or Sentinel URL names at least one host:port")
    return unquote(username) or None, unquote(password) or None, nodes


class RedisStore(ReasoningStore):
    """Records in Redis, shared by every process that points at the same server and prefix."""

    persistent = True

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_records: int = 10_000,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        timeout: float = 0.2,
        required_timeout: float = 2.0,
        read_bytes: int = DEFAULT_READ_BYTES,
        wait_replicas: int = 1,
        wait_seconds: float = 0.1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if _import_error is not None:
            raise ImportError(
                "the Redis reasoning store needs redis-py: pip install 'litellm-reasoning[redis]'"
            ) from _import_error
        self.url = url
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self.max_records = max_records
        """Per tenant: a tenant's oldest records go first beyond it."""
        self.max_record_bytes = max_record_bytes
        self.timeout = timeout
        self.required_timeout = max(required_timeout, timeout)
        self.read_bytes = max(1, read_bytes)
        """The bytes of records one read round trip brings (then it asks for the rest)."""
        self.wait_replicas = max(0, wait_replicas)
        """Behind Sentinel: replicas a write must reach before it counts as kept (`WAIT`)."""
        self.wait_ms = max(1, round(wait_seconds * 1000))
        self._clock = clock
        self._options: dict[str, Any] = {
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
        }
        parsed = urlparse(url)
        self.mode = {"cluster": "cluster", "sentinel": "sentinel"}.get(
            parsed.scheme.partition("+")[2], "standalone"
        )
        self._tag = self.mode == "cluster"
        # redis-py's reply types are unions of every possible reply; the replies used here are
        # documented by the commands, so the clients are typed loosely.
        self._sync: Any = self._client(parsed, timeout)
        self._patient: Any = None
        """(client, put script, read script, joined read script) for required reads and
        writes (`required_timeout`), made on first use."""
        self._sync_put = self._sync.register_script(_PUT)
        self._sync_get = self._sync.register_script(_GET)
        self._sync_joined = self._sync.register_script(_GET_JOINED)
        self._sync_sizes = self._sync.register_script(_SIZES)
        self._threads = ProcessPool(_THREADS, "litellm-reasoning")
        self._patient_lock = threading.Lock()

    def _client(self, parsed: Any, timeout: float) -> Any:
        options = {**self._options, "socket_timeout": timeout}
        if self.mode == "standalone":
            return redis.Redis.from_url(self.url, **options, retry=Retry(NoBackoff(), 0))
        if self.mode == "cluster":
            return self._cluster_client(parsed, options)
        return self._sentinel_client(parsed, options)

    def _cluster_client(self, parsed: Any, options: dict[str, Any]) -> Any:
        import redis.cluster as sync_cluster

        # Untyped in redis-py: held as Any.
        node: Any = sync_cluster.ClusterNode
        client: Any = sync_cluster.RedisCluster
        username, password, nodes = _nodes(parsed.netloc)
        # A few quick tries: a primary that just failed is replaced by the cluster's own
        # failover; meanwhile `ResilientStore` serves from its local layer.
        return client(
            startup_nodes=[node(h, p) for h, p in nodes],
            retry=Retry(NoBackoff(), 1),
            username=username,
            password=password,
            ssl=parsed.scheme.startswith("rediss"),
            **options,
        )

    def _sentinel_client(self, parsed: Any, options: dict[str, Any]) -> Any:
        import redis.sentinel as sync_sentinel

        sentinel: Any = sync_sentinel.Sentinel
        username, password, nodes = _nodes(parsed.netloc)
        service, _, db = parsed.path.strip("/").partition("/")
        if not service:
            raise ValueError("a Sentinel URL names its service: redis+sentinel://h:p/service/db")
        sentinels = {"socket_timeout": self.timeout, "socket_connect_timeout": self.timeout}
        return sentinel(nodes, sentinel_kwargs=sentinels).master_for(
            service,
            retry=Retry(NoBackoff(), 0),
            username=username,
            password=password,
            db=int(db or 0),
            ssl=parsed.scheme.startswith("rediss"),
            **options,
        )

    def _patient_client(self) -> tuple[Any, Any, Any, Any]:
        if self._patient is None:
            with self._patient_lock:
                if self._patient is None:
                    client = self._client(urlparse(self.url), self.required_timeout)
                    self._patient = (
                        client,
                        client.register_script(_PUT),
                        client.register_script(_GET),
                        client.register_script(_GET_JOINED),
                    )
        return self._patient  # type: ignore[no-any-return]

    async def _off_loop(self, call: Callable[[], T]) -> T:
        """`call()` on this store's threads: its deadline is the socket's, not the loop's."""
        return await off_loop(call, self._threads)

    def is_slow(self, exc: BaseException) -> bool:
        return isinstance(exc, (redis.TimeoutError, TimeoutError))

    # ------------------------------------------------------------------ shared helpers

    def _record_key(self, sid: str, key: str) -> str:
        return f"{self.prefix}r:{{{sid}}}:{key}" if self._tag else f"{self.prefix}r:{sid}:{key}"

    def _size_key_of(self, name: str | bytes) -> str:
        """Where the record under key `name` (`<prefix>r:…`) has its size kept beside it
        (`<prefix>n:…`, what a reasoning budget decides from before it reads), with the
        record's byte count: a record an earlier release rewrote since no longer matches it."""
        text = name.decode() if isinstance(name, bytes) else name
        return f"{self.prefix}n{text[len(self.prefix) + 1 :]}"

    def _index(self, sid: str) -> str:
        return f"{self.prefix}i:{{{sid}}}" if self._tag else f"{self.prefix}i:{sid}"

    def _names(self, scope: str, keys: Sequence[str]) -> list[str]:
        """`_record_key` of each of `keys`: the scope's part made once, joined in C."""
        return list(map(self._record_key(scope_id(scope), "").__add__, keys))

    @staticmethod
    def _found(scope: str, keys: Sequence[str], values: Sequence[Any]) -> dict[str, Reasoning]:
        return _codec.records_of(scope, keys, values)

    def _put_args(self, scope: str, records: Mapping[str, Reasoning]) -> dict[str, Any] | None:
        """The `_PUT` script's keys and args, or None when no record is small enough to keep."""
        sid, now = scope_id(scope), self._clock()
        kept = _codec.encode_many(scope, records, now, self.max_record_bytes)
        if not kept:
            return None
        bodies = [body for _, body in kept.values()]
        sizes = [f"{size}:{len(body)}" for size, body in kept.values()]
        names = [self._record_key(sid, key) for key in kept]
        # '' : written as it is (`shared_keys.to_place`)
        conversations = [to_place(records[key].conversation) or "" for key in kept]
        exact = [
            self._record_key(sid, exact_key(key, conversation)) if conversation else name
            for key, name, conversation in zip(kept, names, conversations, strict=True)
        ]
        ttl_ms = max(1, round(self.ttl_seconds * 1000))
        return {
            "keys": [
                self._index(sid),
                *names,
                *map(self._size_key_of, names),
                *exact,
                *map(self._size_key_of, exact),
            ],
            "args": [
                *(round(now * 1000), ttl_ms, self.max_records, len(self.prefix)),
                *bodies,
                *sizes,
                *conversations,
            ],
        }

    # ------------------------------------------------------------------ contract

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        if not keys:
            return {}
        return self._found(scope, keys, self._read(self._sync_get, self._sync_joined, scope, keys))

    def get_required(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        if not keys:
            return {}
        _, _, read, read_joined = self._patient_client()
        return self._found(scope, keys, self._read(read, read_joined, scope, keys))

    def _read(self, script: Any, joined: Any, scope: str, keys: Sequence[str]) -> list[Any]:
        """The values of `keys` in order (None: missing), `read_bytes` per round trip: by
        `joined` (`_GET_JOINED`), or by `script` (`_GET`) when a key holds a newline."""
        sid = scope_id(scope)
        lead = self._record_key(sid, "")
        names = "\n".join(keys) + "\n"
        by_name = names.count("\n") != len(keys)
        values: list[Any] = []
        while len(values) < len(keys):
            rest = keys[len(values) :]
            if by_name:
                batch = script(keys=self._names(scope, rest), args=[self.read_bytes])
            else:
                if values:
                    names = "\n".join(rest) + "\n"
                batch = joined(keys=[self._index(sid)], args=[self.read_bytes, lead, names])
            if not batch:  # a script that read nothing: never loop on it
                raise redis.ResponseError("the read script returned no value")
            values += [value or None for value in batch]
        return values

    async def aget_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return await self._off_loop(lambda: self.get_many(scope, keys))

    async def aget_required(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return await self._off_loop(lambda: self.get_required(scope, keys))

    knows_sizes = True

    def sizes_many(self, scope: str, keys: Sequence[str]) -> dict[str, int | None] | None:
        if not keys:
            return {}
        names = self._names(scope, keys)
        sizes: dict[str, int | None] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = names[start : start + _CHUNK]
            answers = self._sync_sizes(keys=[*chunk, *map(self._size_key_of, chunk)])
            for key, answer in zip(keys[start : start + _CHUNK], answers, strict=True):
                size = int(answer)
                if size != -1:  # -1: no record; -2: its size unknown
                    sizes[key] = size if size >= 0 else None
        return sizes

    async def asizes_many(self, scope: str, keys: Sequence[str]) -> dict[str, int | None] | None:
        return await self._off_loop(lambda: self.sizes_many(scope, keys))

    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        if call := self._put_args(scope, records):
            self._write(self._sync, self._sync_put, call)

    def put_required(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        if call := self._put_args(scope, records):
            client, script, _, _ = self._patient_client()
            self._write(client, script, call)

    def _write(self, client: Any, script: Any, call: dict[str, Any]) -> None:
        """The write script; behind Sentinel followed, on the same connection, by `WAIT` for
        `wait_replicas` replicas (at most `wait_ms`): a write only the primary holds is lost
        when Sentinel promotes a replica, so one no replica confirmed raises `NotReplicated`
        (the caller keeps the records and writes them again, to whichever primary is then)."""
        if self.mode != "sentinel" or self.wait_replicas <= 0 or not self.report_unreplicated:
            script(**call)
            return
        pipe = client.pipeline(transaction=False)
        script(**call, client=pipe)
        pipe.execute_command("WAIT", self.wait_replicas, self.wait_ms)
        acknowledged = int(pipe.execute()[-1])
        if acknowledged < self.wait_replicas:
            raise NotReplicated(
                f"{acknowledged} of {self.wait_replicas} replicas confirmed the write",
                self.primary(),
            )

    def primary(self) -> Any:
        """Behind Sentinel, the primary's address as redis-py last found it (it asks Sentinel
        again whenever a connection to the old one fails)."""
        if self.mode != "sentinel":
            return None
        return getattr(self._sync.connection_pool, "master_address", None)

    async def aput_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        await self._off_loop(lambda: self.put_many(scope, records))

    async def aput_required(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        await self._off_loop(lambda: self.put_required(scope, records))

    def delete_many(self, scope: str, keys: Sequence[str]) -> None:
        if names := self._names(scope, keys):
            sid = scope_id(scope)
            sizes = [self._size_key_of(name) for name in names]
            if self.mode == "cluster":  # its pipelines take no multi-key UNLINK
                self._sync.unlink(*names, *sizes)
                self._sync.zrem(self._index(sid), *names)
                return
            pipe = self._sync.pipeline(transaction=False)
            pipe.unlink(*names, *sizes)
            pipe.zrem(self._index(sid), *names)
            pipe.execute()

    async def adelete_many(self, scope: str, keys: Sequence[str]) -> None:
        await self._off_loop(lambda: self.delete_many(scope, keys))

    def open_now(self) -> None:
        """At startup: one warning when the server evicts keys across tenants (`maxmemory` set
        with a policy other than `noeviction`). Never raises; a server that does not answer
        `CONFIG GET` (managed Redis often refuses it) is not asked again."""
        try:
            memory = self._sync.config_get("maxmemory")
            policy = self._sync.config_get("maxmemory-policy")
        except Exception as exc:
            logger.debug("litellm-reasoning: Redis' eviction settings cannot be read: %s", exc)
            return
        warning = cross_tenant_eviction(memory, policy, self.max_records)
        if warning is not None:
            logger.warning("litellm-reasoning: %s", warning)

    def close(self) -> None:
        self._sync.close()
        if self._patient is not None:
            self._patient[0].close()
        self._threads.close()

    async def aclose(self) -> None:
        """`close` off the loop (closing connections may block on a lost server)."""
        await asyncio.to_thread(self.close)

    # ------------------------------------------------------------------ operator side

    def _indexes(self, scope: str | None) -> list[str]:
        if scope is not None:
            return [
                i
                for i in {self._index(scope_id(scope)), self._index(scope)}
                if self._sync.exists(i)
            ]
        return sorted(
            name.decode() if isinstance(name, bytes) else name
            for name in self._sync.scan_iter(match=f"{self.prefix}i:*", count=1000)
        )

    def _live(self, index: str) -> Iterator[tuple[str, float, int, bytes | None]]:
        """(record key, written at, ms to live, body) of the live records an index names."""
        entries = self._sync.zrange(index, 0, -1, withscores=True)
        for start in range(0, len(entries), _CHUNK):
            chunk = entries[start : start + _CHUNK]
            pipe = self._sync.pipeline(transaction=False)
            for name, _ in chunk:
                pipe.get(name)
                pipe.pttl(name)
            replies = pipe.execute()
            for i, (name, score) in enumerate(chunk):
                body, pttl = replies[2 * i], replies[2 * i + 1]
                if body is not None:
                    yield (name.decode(), score / 1000, pttl, body)

    def _stored(self, index: str) -> list[StoredRecord]:
        now = self._clock()
        out = []
        for name, created, pttl, body in self._live(index):
            decoded = _codec.decode(body or b"")
            key = name.rsplit(":", 1)[-1]
            size = record_size(decoded.record) if decoded.record else len(body or b"")
            expires = now + pttl / 1000 if pttl >= 0 else float("inf")
            out.append(StoredRecord(decoded.scope, key, created, expires, size, decoded.record))
        return out

    def caps(self) -> dict[str, Any]:
        return {
            "max_records": None,
            "max_bytes": None,
            "ttl_seconds": self.ttl_seconds,
            "per_tenant": f"at most {self.max_records} records a tenant (its oldest go first); "
            "total memory: the server's maxmemory, which must hold every tenant's cap",
        }

    def tenants(self) -> list[TenantStats]:
        stats = []
        for index in self._indexes(None):
            rows = self._stored(index)
            if rows:
                stats.append(
                    TenantStats(
                        scope=rows[0].scope,
                        scope_id=index.rsplit(":", 1)[-1].strip("{}"),
                        records=len(rows),
                        bytes=sum(r.size for r in rows),
                        oldest=min(r.created_at for r in rows),
                        newest=max(r.created_at for r in rows),
                    )
                )
        return sorted(stats, key=lambda s: s.scope)

    def list_records(self, scope: str, *, limit: int = 100) -> list[StoredRecord]:
        rows = [r for index in self._indexes(scope) for r in self._stored(index)]
        return sorted(rows, key=lambda r: r.created_at, reverse=True)[:limit]

    def purge(self, *, scope: str | None = None, older_than: float | None = None) -> int:
        cutoff = "+inf" if older_than is None else f"({round((self._clock() - older_than) * 1000)}"
        removed = 0
        for index in self._indexes(scope):
            names = self._sync.zrangebyscore(index, "-inf", cutoff)
            for start in range(0, len(names), _CHUNK):
                chunk = names[start : start + _CHUNK]
                sizes = [self._size_key_of(name) for name in chunk]
                if self.mode == "cluster":  # no transactions, no multi-key UNLINK in pipelines
                    removed += int(self._sync.unlink(*chunk))
                    self._sync.unlink(*sizes)
                    self._sync.zrem(index, *chunk)
                    continue
                pipe = self._sync.pipeline(transaction=True)
                pipe.unlink(*chunk)
                pipe.unlink(*sizes)
                pipe.zrem(index, *chunk)
                removed += pipe.execute()[0]
        return removed
