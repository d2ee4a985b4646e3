"""Real Claude recordings (Anthropic Messages API, Bedrock Converse) replayed through real LiteLLM.

Each test plays one cassette from `cassettes/` (built by `cassettes/build_cassettes.py`):
request 1 as the recorded client sent it, then each later request as a client sends it after
LiteLLM's reply, either keeping the reply as LiteLLM gave it (`thinking_blocks` included) or
keeping only role, content and tool calls. vcrpy answers from the cassette (matching method and
path) and the tests read the request bodies LiteLLM's HTTP client really sent.

Expected thinking blocks come from the raw recordings: the request the recorded client sent
(and the provider accepted) after the reply, and the reply itself (JSON content blocks, SSE
`thinking_delta` / `signature_delta` events, or Bedrock's binary event stream), never from
LiteLLM or the callback.
"""

from __future__ import annotations

import asyncio
import copy
import json
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import litellm
import pytest
import vcr
from paths import REPO
from vcr.cassette import Cassette
from vcr.request import Request

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.testing.stores import SpyStore

CASSETTES = REPO / "cassettes"
Json = dict[str, Any]
Mode = Literal["sync", "async", "router.sync", "router.async"]

sync_and_async = pytest.mark.parametrize("mode", ["sync", "async"])
keeps_or_drops = pytest.mark.parametrize("keep", [True, False], ids=["keeps", "drops"])
streamed_or_not = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
THINKING = ("thinking", "redacted_thinking")

pytestmark = pytest.mark.usefixtures("fake_aws")


# ---------------------------------------------------------------- reading the recordings


def _text(body: Any) -> str:
    if isinstance(body, bytes):
        return body.decode("utf-8")
    return "" if body is None else str(body)


def sse_content(body: str) -> list[Json]:
    """The content blocks an Anthropic SSE body assembles to, by block index."""
    blocks: dict[int, Json] = {}
    for line in body.splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event.get("type") == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif event.get("type") == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
    return [blocks[i] for i in sorted(blocks)]


def eventstream_events(raw: bytes) -> list[Json]:
    """`{event type: payload}` for each message of an AWS event stream."""
    out: list[Json] = []
    offset = 0
    while offset < len(raw):
        total, header_len = struct.unpack(">II", raw[offset : offset + 8])
        cursor, end_headers = offset + 12, offset + 12 + header_len
        kind = ""
        while cursor < end_headers:
            name_len = raw[cursor]
            name = raw[cursor + 1 : cursor + 1 + name_len].decode()
            cursor += 2 + name_len
            value_len = struct.unpack(">H", raw[cursor : cursor + 2])[0]
            if name == ":event-type":
                kind = raw[cursor + 2 : cursor + 2 + value_len].decode()
            cursor += 2 + value_len
        out.append({kind: json.loads(raw[end_headers : offset + total - 4])})
        offset += total
    return out


def converse_stream_reasoning(raw: bytes) -> Json:
    """The `reasoningContent` block a Converse stream assembles to (text deltas + signature)."""
    text, signature = "", None
    for event in eventstream_events(raw):
        delta = (event.get("contentBlockDelta") or {}).get("delta") or {}
        piece = delta.get("reasoningContent") or {}
        text += piece.get("text", "")
        signature = piece.get("signature", signature)
    return {"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}


@dataclass
class Exchange:
    path: str
    body: Json
    response: Any
    content_type: str


@dataclass
class Wire:
    exchanges: list[Exchange] = field(default_factory=list)

    def body(self, k: int) -> Json:
        return self.exchanges[k].body


@contextmanager
def replay(name: str) -> Iterator[Wire]:
    """Play `cassettes/<name>.yaml` in order, each interaction once; all must be used."""
    recorder = vcr.VCR(record_mode="none", match_on=["method", "path"])
    wire = Wire()
    with recorder.use_cassette(
        str(CASSETTES / f"{name}.yaml"), allow_playback_repeats=False
    ) as cassette:
        play = cassette.play_response

        def play_response(request: Request) -> Any:
            response = play(request)
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            raw = _text(request.body)
            wire.exchanges.append(
                Exchange(
                    path=request.path,
                    body=json.loads(raw) if raw else {},
                    response=response["body"]["string"],
                    content_type=";".join(headers.get("content-type") or []),
                )
            )
            return response

        setattr(cassette, "play_response", play_response)  # noqa: B010
        yield wire
        assert isinstance(cassette, Cassette)
        assert cassette.all_played, f"{name}: not every recorded interaction was replayed"


def recorded(name: str) -> list[Json]:
    """The cassette's interactions as recorded (request bodies parsed)."""
    import yaml

    raw = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text(encoding="utf-8"))
    return [
        {
            "request": json.loads(item["request"]["body"]),
            "response": item["response"]["body"]["string"],
        }
        for item in raw["interactions"]
    ]


def script(name: str) -> Json:
    data: Json = json.loads((CASSETTES / "scripts" / f"{name}.json").read_text(encoding="utf-8"))
    return data


# ---------------------------------------------------------------- playing a cassette


def _reply_dict(message: Any) -> Json:
    data = message.model_dump() if hasattr(message, "model_dump") else dict(message)
    return {k: v for k, v in data.items() if v is not None}


async def send(mode: Mode, kwargs: Json) -> Json:
    """One LiteLLM call, its stream read to the end; the reply message as the client has it."""

    def assemble(chunks: list[Any]) -> Json:
        built = litellm.stream_chunk_builder(chunks)
        assert built is not None
        return _reply_dict(built.choices[0].message)

    target: Any = litellm
    if mode.startswith("router."):
        params = {k: v for k, v in kwargs.items() if k in ("model", "api_key", "aws_region_name")}
        target = litellm.Router(
            model_list=[{"model_name": "claude", "litellm_params": params}], num_retries=0
        )
        kwargs = {k: v for k, v in kwargs.items() if k not in params} | {"model": "claude"}
    if mode.endswith("async"):
        response = await target.acompletion(**kwargs)
        if kwargs.get("stream"):
            return assemble([chunk async for chunk in response])
        return _reply_dict(response.choices[0].message)

    def call() -> Json:
        response = target.completion(**kwargs)
        if kwargs.get("stream"):
            return assemble(list(response))
        return _reply_dict(response.choices[0].message)

    return await asyncio.to_thread(call)


def client_view(reply: Json, keep: bool) -> Json:
    """What the client sends back of a reply: all of it, or role, content and tool calls."""
    out: Json = {"role": "assistant", "content": reply.get("content")}
    if reply.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                },
            }
            for call in reply["tool_calls"]
        ]
    if keep:
        for key in ("thinking_blocks", "reasoning_content", "provider_specific_fields"):
            if reply.get(key) is not None:
                out[key] = reply[key]
    return out


@dataclass
class Run:
    name: str
    wire: Wire
    replies: list[Json]
    sent: list[Json]


async def play(
    name: str, mode: Mode, *, keep: bool, stream: bool | None = None, wait: bool = False
) -> Run:
    """Every request of `name`'s script, each sent right after the previous reply arrived.

    `stream` overrides the first request's streaming (a JSON recording cannot be streamed, so
    only follow-ups, which are JSON, may be); `wait` lets the previous capture land first."""
    data = script(name)
    replies: list[Json] = []
    sent: list[Json] = []
    with replay(name) as wire:
        for k, request in enumerate(data["requests"]):
            body = copy.deepcopy(request["body"])
            for index, j in request["echoes"].items():
                body["messages"][int(index)] = client_view(replies[j], keep)
            if k > 0:
                body["stream"] = bool(stream)
            body["model"] = f"{data['provider']}/{body['model']}"
            if data["provider"] == "anthropic":
                body["api_key"] = "replay-without-a-key"
            else:
                body["aws_region_name"] = "us-east-1"
            sent.append(body)
            if wait and k > 0:
                await asyncio.sleep(0.2)
            replies.append(await send(mode, body))
    assert len(wire.exchanges) == len(data["requests"])
    return Run(name, wire, replies, sent)


# ---------------------------------------------------------------- fixtures


@pytest.fixture
def make_callback() -> Iterator[Callable[..., ReasoningCallback]]:
    def make(**kwargs: Any) -> ReasoningCallback:
        callback = ReasoningCallback(SpyStore(), capture_wait_seconds=10.0, **kwargs)
        litellm.callbacks = [callback]
        return callback

    litellm.logging_callback_manager._reset_all_callbacks()
    yield make
    litellm.logging_callback_manager._reset_all_callbacks()


@pytest.fixture
def callback(make_callback: Callable[..., ReasoningCallback]) -> ReasoningCallback:
    return make_callback()


async def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def leading_thinking(content: list[Json]) -> list[Json]:
    """The thinking blocks at the start of an Anthropic content list; none may follow."""
    n = 0
    while n < len(content) and content[n].get("type") in THINKING:
        n += 1
    assert all(part.get("type") not in THINKING for part in content[n:])
    return content[:n]


def parts_of(blocks: list[Json]) -> list[tuple[str, str, str | None]]:
    return [
        ("redacted", b["data"], None)
        if b["type"] == "redacted_thinking"
        else ("thinking", b["thinking"], b["signature"])
        for b in blocks
    ]


def record_parts(record: Reasoning) -> list[tuple[str, str, str | None]]:
    return [
        ("redacted", p.data or "", None) if p.kind == "redacted" else (p.kind, p.text, p.signature)
        for p in record.parts
    ]


def spy(callback: ReasoningCallback) -> SpyStore:
    assert isinstance(callback.store, SpyStore)
    return callback.store


# ---------------------------------------------------------------- Anthropic Messages API


@pytest.mark.parametrize("mode", ["sync", "async", "router.sync", "router.async"])
@keeps_or_drops
async def test_anthropic_tool_loop_sends_the_signed_thinking_back_exactly(
    mode: Mode, keep: bool, callback: ReasoningCallback
) -> None:
    """claude-sonnet-4-0 tool loop (non-streaming): request 2 carries the reply's signed thinking
    block byte for byte, first in the assistant message, then the text and the tool_use, as the
    recorded client sent it and Anthropic accepted."""
    run = await play("anthropic_tool_loop", mode, keep=keep)
    rec = recorded("anthropic_tool_loop")

    reply_blocks = [b for b in json.loads(rec[0]["response"])["content"] if b["type"] in THINKING]
    accepted = rec[1]["request"]["messages"][1]["content"]
    assert leading_thinking(accepted) == reply_blocks
    assert len(reply_blocks) == 1 and reply_blocks[0]["signature"].startswith("EqEE")

    assert run.wire.body(0)["messages"] == rec[0]["request"]["messages"]
    on_wire = run.wire.body(1)["messages"]
    assert [m["role"] for m in on_wire] == ["user", "assistant", "user"]
    assert leading_thinking(on_wire[1]["content"]) == reply_blocks
    assert [(b["type"], b.get("text"), b.get("id")) for b in on_wire[1]["content"][1:]] == [
        (b["type"], b.get("text"), b.get("id")) for b in accepted[1:]
    ]
    assert run.wire.body(1)["thinking"] == rec[1]["request"]["thinking"]

    await eventually(lambda: callback.stats["captured"] >= 1)
    first = spy(callback).records[0]
    assert record_parts(first) == parts_of(reply_blocks)
    # the model that answered (the recorded reply names the snapshot behind the alias asked for)
    answered = json.loads(rec[0]["response"])["model"]
    assert rec[0]["request"]["model"] == "claude-sonnet-4-0" != answered
    assert (first.provider, first.model) == ("anthropic", answered)
    assert callback.stats["restored"] == (0 if keep else 1)
    assert callback.stats["thinking_disabled"] == 0
    assert callback.stats["dropped"] == 0
    assert callback.stats["errors"] == 0


@sync_and_async
@keeps_or_drops
@streamed_or_not
async def test_anthropic_streamed_tool_use_is_restored_the_instant_the_stream_ends(
    mode: Mode, keep: bool, stream: bool, callback: ReasoningCallback
) -> None:
    """claude-sonnet-4-6 SSE (thinking_delta, signature_delta, text, tool_use): the tool-result
    request sent right after the stream ends carries the assembled, signed thinking block."""
    run = await play("anthropic_stream_tool_use", mode, keep=keep, stream=stream)
    rec = recorded("anthropic_stream_tool_use")

    (streamed,) = [b for b in sse_content(_text(rec[0]["response"])) if b["type"] == "thinking"]
    assert streamed["signature"].startswith("EroC") and streamed["thinking"].startswith("The user")
    on_wire = run.wire.body(1)["messages"]
    assert leading_thinking(on_wire[1]["content"]) == [streamed]
    assert [b["type"] for b in on_wire[1]["content"]] == ["thinking", "text", "tool_use"]
    assert on_wire[2]["content"][0]["type"] == "tool_result"
    assert callback.stats["restored"] == (0 if keep else 1)
    assert callback.stats["errors"] == 0
    await eventually(lambda: callback.stats["captured"] >= 1)
    assert record_parts(spy(callback).records[0]) == parts_of([streamed])


@sync_and_async
@keeps_or_drops
async def test_anthropic_two_streamed_redacted_blocks_go_back_in_order(
    mode: Mode, keep: bool, callback: ReasoningCallback
) -> None:
    """Two redacted_thinking blocks that arrived whole in content_block_start: the next request
    of the same turn (a `turn: false` note) carries both, data exact, in order, first."""
    run = await play("anthropic_redacted_stream", mode, keep=keep)
    rec = recorded("anthropic_redacted_stream")

    redacted = sse_content(_text(rec[0]["response"]))[:2]
    assert [b["type"] for b in redacted] == ["redacted_thinking", "redacted_thinking"]
    on_wire = run.wire.body(1)["messages"]
    assert leading_thinking(on_wire[1]["content"]) == redacted
    assert "turn" not in on_wire[2]
    assert callback.stats["restored"] == (0 if keep else 1)
    await eventually(lambda: callback.stats["captured"] >= 1)
    assert record_parts(spy(callback).records[0]) == parts_of(redacted)


@sync_and_async
@keeps_or_drops
@pytest.mark.parametrize("name", ["anthropic_thinking_part", "anthropic_redacted"])
async def test_anthropic_new_question_sends_no_earlier_thinking(
    name: str, mode: Mode, keep: bool, callback: ReasoningCallback
) -> None:
    """A new question starts a turn: under the default policy the earlier reply goes without
    its thinking (the recorded client sent it; pre-Opus-4.5 Claude strips it anyway)."""
    run = await play(name, mode, keep=keep)
    rec = recorded(name)

    assert leading_thinking(rec[1]["request"]["messages"][1]["content"])
    on_wire = run.wire.body(1)["messages"]
    assert leading_thinking(on_wire[1]["content"]) == []
    assert [b["text"] for b in on_wire[1]["content"]] == [
        b["text"] for b in rec[1]["request"]["messages"][1]["content"] if b["type"] == "text"
    ]
    assert callback.stats["stripped"] == (1 if keep else 0)
    assert callback.stats["restored"] == 0


@sync_and_async
@keeps_or_drops
@pytest.mark.parametrize("name", ["anthropic_thinking_part", "anthropic_redacted"])
async def test_anthropic_all_turns_policy_sends_what_the_recorded_client_sent(
    name: str, mode: Mode, keep: bool, make_callback: Callable[..., ReasoningCallback]
) -> None:
    """With `all_turns`, request 2 carries turn 1's thinking (signed, or redacted data) exactly
    as the recorded client sent it, restored when the client dropped it."""
    callback = make_callback(policies={"anthropic/*": "all_turns"})
    run = await play(name, mode, keep=keep)
    rec = recorded(name)

    accepted = leading_thinking(rec[1]["request"]["messages"][1]["content"])
    reply = [b for b in json.loads(rec[0]["response"])["content"] if b["type"] in THINKING]
    assert accepted == reply and accepted
    assert leading_thinking(run.wire.body(1)["messages"][1]["content"]) == accepted
    assert callback.stats["restored"] == (0 if keep else 1)


# ---------------------------------------------------------------- Bedrock Converse


def converse_reasoning(content: list[Json]) -> list[Json]:
    n = 0
    while n < len(content) and "reasoningContent" in content[n]:
        n += 1
    assert all("reasoningContent" not in part for part in content[n:])
    return content[:n]


@pytest.mark.parametrize("mode", ["async", "router.async", "sync"])
@keeps_or_drops
async def test_bedrock_tool_loop_sends_reasoning_content_back_exactly(
    mode: Mode, keep: bool, callback: ReasoningCallback
) -> None:
    """Claude 3.7 on Bedrock Converse, tool loop (acompletion, Router, sync `completion`, whose
    body LiteLLM signs before any hook: rendered where LiteLLM builds it): request 2 carries the
    reply's reasoningText (text + signature) first, exactly as the recorded client sent it."""
    run = await play("bedrock_tool_loop", mode, keep=keep)
    rec = recorded("bedrock_tool_loop")

    reply = json.loads(rec[0]["response"])["output"]["message"]["content"]
    accepted = rec[1]["request"]["messages"][1]["content"]
    assert converse_reasoning(accepted) == converse_reasoning(reply) != []
    on_wire = run.wire.body(1)["messages"][1]["content"]
    assert converse_reasoning(on_wire) == converse_reasoning(accepted)
    assert [next(iter(b)) for b in on_wire] == ["reasoningContent", "text", "toolUse"]
    assert run.wire.body(1)["additionalModelRequestFields"]["thinking"]["type"] == "enabled"
    assert callback.stats["restored"] == (0 if keep else 1)
    await eventually(lambda: callback.stats["captured"] >= 1)
    record = spy(callback).records[0]
    assert record.provider == "bedrock"
    text = reply[0]["reasoningContent"]["reasoningText"]
    assert record_parts(record) == [("thinking", text["text"], text["signature"])]


@keeps_or_drops
async def test_bedrock_redacted_content_reaches_the_wire(
    keep: bool, make_callback: Callable[..., ReasoningCallback]
) -> None:
    """Bedrock redactedContent (Claude 3.7): with `all_turns`, request 2 carries it exactly as
    the recorded client sent it. LiteLLM 1.106.12 drops redacted blocks for Converse; the
    callback's fix makes them arrive there too (1.110.2 sends them itself)."""
    callback = make_callback(policies={"bedrock/*": "all_turns"})
    run = await play("bedrock_redacted", "async", keep=keep)
    rec = recorded("bedrock_redacted")

    reply = json.loads(rec[0]["response"])["output"]["message"]["content"]
    accepted = converse_reasoning(rec[1]["request"]["messages"][1]["content"])
    assert accepted == converse_reasoning(reply)
    assert "redactedContent" in accepted[0]["reasoningContent"]
    assert converse_reasoning(run.wire.body(1)["messages"][1]["content"]) == accepted
    assert callback.stats["restored"] == (0 if keep else 1)


@keeps_or_drops
async def test_bedrock_binary_stream_reasoning_is_restored(
    keep: bool, callback: ReasoningCallback
) -> None:
    """converse-stream (AWS binary event stream): text deltas and a signature delta; the next
    request of the same turn carries the assembled reasoningText with its signature."""
    run = await play("bedrock_stream", "async", keep=keep)
    rec = recorded("bedrock_stream")

    expected = converse_stream_reasoning(rec[0]["response"])
    assert expected["reasoningContent"]["reasoningText"]["signature"]
    assert converse_reasoning(run.wire.body(1)["messages"][1]["content"]) == [expected]
    assert run.wire.exchanges[1].path.endswith("/converse")
    assert callback.stats["restored"] == (0 if keep else 1)
