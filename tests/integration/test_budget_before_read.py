"""`max_reasoning_tokens` decides what is read before it is fetched: a long conversation
restored on a worker that never saw it reads only the records the budget keeps (the sizes the
store keeps beside them say which), and what reaches the wire is what reading every record and
cutting afterwards sends.

Through real LiteLLM (`acompletion` and `completion`) against the local OpenAI-compatible
server, on SQLite and Redis (each behind the callback's fail-open layer, as configured from a
URL). The policy is `all_turns` by override, so earlier turns carry their reasoning and the
budget has something to leave out.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from clients import complete, send_messages
from conftest import register, settled

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.stores import ResilientStore
from litellm_reasoning.testing.upstream import Reply, Upstream

pytest_plugins = ["store_fixtures"]

TURNS = 6
REASONING_CHARS = 400
"""Each reply's reasoning: 100 estimated tokens."""


def _reasoning(model: str, turn: int) -> str:
    text = f"Turn {turn} of {model}: "
    return text + "r" * (REASONING_CHARS - len(text))


async def _conversation(how: str, upstream: Upstream, model: str) -> list[dict[str, Any]]:
    """`TURNS` turns captured by the registered callback; the client drops the reasoning."""
    history: list[dict[str, Any]] = []
    for turn in range(TURNS):
        upstream.script(
            model,
            Reply(
                message={"content": f"answer {turn}", "reasoning_content": _reasoning(model, turn)}
            ),
        )
        history.append({"role": "user", "content": f"question {turn}"})
        reply = await complete(how, f"openai/{model}", upstream.base_url, history, stream=False)
        assert reply.reasoning_content == _reasoning(model, turn)
        history.append({"role": "assistant", "content": reply.content})
    return [*history, {"role": "user", "content": "one more"}]


async def _sent(how: str, upstream: Upstream, model: str, history: list[Any]) -> list[Any]:
    upstream.script(model, Reply(message={"content": "done"}))
    await complete(how, f"openai/{model}", upstream.base_url, history, stream=False)
    wire = upstream.bodies(model)[-1]["messages"]
    return [m.get("reasoning_content") for m in wire if m["role"] == "assistant"]


def _worker(url: str, budget: int, **more: Any) -> ReasoningCallback:
    """A worker that never saw the conversation: a new callback on the same store."""
    return register(
        ReasoningCallback(
            store=url, policies={"*": "all_turns"}, max_reasoning_tokens=budget, **more
        )
    )


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_records_over_the_budget_are_never_read(
    backend: str, how: str, upstream: Upstream, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'store.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("redis_url")
    )
    model = f"budget-{uuid.uuid4().hex[:8]}"
    writer = register(ReasoningCallback(store=url, policies={"*": "all_turns"}))
    history = await _conversation(how, upstream, model)
    await settled(writer)
    assert writer.stats["captured"] == TURNS

    # Room for two records and a half: the cut goes in half-budget steps (prompt cache), so
    # the oldest four go and the newest two are sent.
    budget = 250
    cold = _worker(url, budget)
    sent = await _sent(how, upstream, model, history)
    expected = [None] * 4 + [_reasoning(model, 4), _reasoning(model, 5)]
    assert sent == expected
    store = cold.store
    assert isinstance(store, ResilientStore)
    assert store.stats["records_read"] == 2, store.stats  # the four over the budget: unread
    assert cold.stats["unread_over_budget"] == 4
    assert cold.stats["over_budget"] == 4 and cold.stats["missing"] == 0

    # The same request through a worker that reads every record and cuts afterwards (an
    # operator's own token counter needs the records): the same wire.
    def count(reasoning: Reasoning) -> int:
        return reasoning.estimated_tokens

    reading = _worker(url, budget, count_reasoning_tokens=count)
    assert await _sent(how, upstream, model, history) == expected
    assert isinstance(reading.store, ResilientStore)
    assert reading.store.stats["records_read"] == TURNS
    assert reading.stats["unread_over_budget"] == 0
    assert reading.stats["over_budget"] == 4


async def test_a_record_of_an_earlier_release_is_read_with_the_rest(
    upstream: Upstream, redis_url: str, redis_prefix: str
) -> None:
    """A record without its size (0.4.0 and earlier write none) leaves the decision to after
    the read: every record is read, the same wire."""
    import redis

    model = f"budget-{uuid.uuid4().hex[:8]}"
    writer = register(ReasoningCallback(store=redis_url, policies={"*": "all_turns"}))
    history = await _conversation("acompletion", upstream, model)
    await settled(writer)
    client = redis.Redis()
    (size_key, *_) = sorted(client.scan_iter(match=f"{redis_prefix}n:*"))
    client.delete(size_key)
    client.close()

    cold = _worker(redis_url, 250)
    sent = await _sent("acompletion", upstream, model, history)
    assert sent == [None] * 4 + [_reasoning(model, 4), _reasoning(model, 5)]
    assert isinstance(cold.store, ResilientStore)
    assert cold.store.stats["records_read"] == TURNS
    assert cold.stats["unread_over_budget"] == 0


# ------------------------------------------------------------------ the Anthropic format


def _turn(tag: str) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": f"Think about {tag}. " * 20, "signature": f"EqQB-{tag}=="},
        {"type": "text", "text": f"{tag} done."},
    ]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_messages_route_reads_only_what_the_budget_keeps(
    backend: str, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    """`/v1/messages` (`litellm.anthropic.messages`), a client that drops the blocks: a
    worker that never saw the conversation reads only the records the budget keeps, and
    sends what a worker reading them all sends; the strict Claude server accepts both."""
    from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

    url = (
        f"sqlite:///{tmp_path / 'store.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("redis_url")
    )
    model = "claude-opus-4-6"
    policies = {"*": "all_turns"}
    with AnthropicUpstream(strict=True) as claude:
        claude.script(model, *(AnthropicReply(_turn(tag)) for tag in ("one", "two", "three")))
        claude.always(model, AnthropicReply([{"type": "text", "text": "ok"}]))

        async def send(messages: list[Any]) -> Any:
            return await send_messages(claude.base_url, model, messages)

        writer = register(ReasoningCallback(store=url, policies=policies))
        messages: list[Any] = []
        for question in ("One?", "Two?", "Three?"):
            messages.append({"role": "user", "content": question})
            reply = await send(messages)
            dropped = [b for b in reply["content"] if b["type"] != "thinking"]
            messages.append({"role": "assistant", "content": dropped})
        messages.append({"role": "user", "content": "Four?"})
        await settled(writer)
        assert writer.stats["captured"] == 3

        def count(reasoning: Reasoning) -> int:
            return reasoning.estimated_tokens

        wires = []
        for more in ({}, {"count_reasoning_tokens": count}):
            worker = _worker(url, 150, **more)
            await send(messages)
            wires.append(claude.bodies(model)[-1]["messages"])
            assert isinstance(worker.store, ResilientStore)
            reads = worker.store.stats["records_read"]
            # ~88 estimated tokens a turn: 264 > 150, cut in steps of 75: the oldest two go.
            assert (reads, worker.stats["unread_over_budget"]) == ((1, 2) if not more else (3, 0))
            assert worker.stats["over_budget"] == 2
        assert claude.refusals == []
    assert wires[0] == wires[1]
    kinds = [[b["type"] for b in m["content"]] for m in wires[0] if m["role"] == "assistant"]
    assert kinds == [["text"], ["text"], ["thinking", "text"]]
