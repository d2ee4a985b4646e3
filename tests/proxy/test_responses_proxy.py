"""OpenAI Responses through the real LiteLLM proxy: the official `openai` client's
`responses.create` (`/v1/responses`) and `chat.completions.create` on an
`openai/responses/<model>` deployment, against a local upstream answering with the recorded
replies of `cassettes/openai_responses_*.yaml`. Assertions are on the bodies the upstream
received; expectations come from the requests the recorded client sent."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
import yaml
from clients import RESPONSES_TOOLS, chat_only_tool_loop, next_input
from paths import REPO
from proxy_utils import Proxy, proxy_config, run_proxy

from litellm_reasoning.testing.refusals import deepseek_reasoning_required
from litellm_reasoning.testing.upstream import Reply, Upstream

pytestmark = pytest.mark.proxy

CASSETTES = REPO / "cassettes"
Json = dict[str, Any]


def _cassette(name: str) -> list[Json]:
    raw = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text(encoding="utf-8"))
    return list(raw["interactions"])


def _reply(item: Json) -> Reply:
    content_type = ";".join(item["response"]["headers"].get("content-type") or [])
    return Reply(raw_body=item["response"]["body"]["string"], content_type=content_type)


def _request(item: Json) -> Json:
    body: Json = json.loads(item["request"]["body"])
    return body


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    # DeepSeek's rule judges chat bodies only (the Responses bodies here carry `input`).
    with Upstream(refuse=[deepseek_reasoning_required]) as up:
        yield up


@pytest.fixture(scope="module")
def proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    deployments = [
        {
            "model_name": name,
            "litellm_params": {"model": model, "api_base": upstream.base_url, "api_key": "x"},
        }
        for name, model in (
            ("native-gpt-5", "openai/gpt-5"),
            ("native-gpt-5.5", "openai/gpt-5.5"),
            ("bridge-gpt-5", "openai/responses/gpt-5"),
            ("current-turn-gpt-5", "openai/gpt-5"),
            ("chat-only-deepseek", "deepseek/deepseek-v4-flash"),
            ("ws-vllm", "hosted_vllm/gpt-5.5"),
        )
    ]
    with run_proxy(
        proxy_config(deployments),
        tmp_path_factory.mktemp("proxy"),
        env={
            "LITELLM_REASONING_STORE": "memory://",
            "LITELLM_REASONING_POLICIES": json.dumps({"current-turn-*": "current_turn"}),
        },
    ) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: Proxy) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
    ) as c:
        yield c


def _create(client: openai.OpenAI, group: str, body: Json, items: list[Json]) -> None:
    kwargs = {k: v for k, v in body.items() if k not in ("model", "input")}
    if body.get("stream"):
        with client.responses.create(model=group, input=items, **kwargs) as events:  # type: ignore[call-overload]
            for _ in events:
                pass
    else:
        client.responses.create(model=group, input=items, **kwargs)  # type: ignore[call-overload]


def _second_input(name: str, first: Json, second: Json) -> tuple[list[Json], list[Json]]:
    """The second request's input as a client that drops reasoning items sends it, and as the
    recorded client sent it."""
    recorded = _request(second)["input"]
    dropped = [copy.deepcopy(item) for item in recorded if item.get("type") != "reasoning"]
    if name == "openai_responses_stream_tool_call":
        # pydantic-ai normalised the recorded request's text; the client sends the reply's own.
        sse = first["response"]["body"]["string"]
        done = [json.loads(line[5:]) for line in sse.splitlines() if line.startswith("data:")]
        message = next(
            e["item"]
            for e in done
            if e.get("type") == "response.output_item.done" and e["item"]["type"] == "message"
        )
        for item in (*dropped, *recorded):
            if item.get("id") == message["id"]:
                item["content"][0]["text"] = message["content"][0]["text"]
    return dropped, recorded


@pytest.mark.parametrize(
    ("name", "group", "model"),
    [
        ("openai_responses_tool_loop", "native-gpt-5", "gpt-5"),
        ("openai_responses_stream_tool_call", "native-gpt-5.5", "gpt-5.5"),
    ],
)
def test_v1_responses_restores_dropped_reasoning_items(
    upstream: Upstream, client: openai.OpenAI, name: str, group: str, model: str
) -> None:
    """`client.responses.create` with the recorded input minus its reasoning items: the
    upstream receives request 2 as the recorded client sent it (rs_ id paired with the kept
    fc_ / msg_ id, encrypted_content byte for byte)."""
    first, second = _cassette(name)
    upstream.script(model, _reply(first), _reply(second))
    before = len(upstream.bodies(model))
    _create(client, group, _request(first), _request(first)["input"])
    dropped, recorded = _second_input(name, first, second)
    _create(client, group, _request(second), dropped)
    sent = upstream.bodies(model)[before:]
    assert len(sent) == 2
    assert sent[1]["input"] == recorded


def test_websocket_mode_of_a_managed_provider_restores_through_the_hooks(
    upstream: Upstream, proxy: Proxy
) -> None:
    """`/v1/responses` over a WebSocket (the proxy's Responses WebSocket mode, OpenAI's
    `response.create` frames). For a provider without a WebSocket endpoint of its own (vLLM
    here) LiteLLM's managed handler makes each frame a `litellm.aresponses(stream=True)` call,
    whose hooks this callback restores in: the dropped reasoning items reach the upstream as on
    HTTP. (A provider with its own WebSocket, OpenAI or Azure, gets the frames past every hook:
    not covered, docs/providers.md.)"""
    # LiteLLM's proxy extra brings `websockets` (its WebSocket routes need it)
    from websockets.sync.client import connect

    name = "openai_responses_stream_tool_call"
    first, second = _cassette(name)
    upstream.script("gpt-5.5", _reply(first), _reply(second))
    before = len(upstream.bodies("gpt-5.5"))
    dropped, recorded = _second_input(name, first, second)
    url = "ws" + proxy.base_url.removeprefix("http") + "/responses"
    headers = {"Authorization": f"Bearer {proxy.master_key}"}
    ends = {"response.completed", "response.incomplete", "response.failed", "error"}
    last: list[str] = []
    with connect(url, additional_headers=headers, open_timeout=60) as socket:
        for body, items in (
            (_request(first), _request(first)["input"]),
            (_request(second), dropped),
        ):
            frame = {k: v for k, v in body.items() if k not in ("model", "input", "stream")}
            socket.send(
                json.dumps({"type": "response.create", "model": "ws-vllm", **frame, "input": items})
            )
            while True:
                event = json.loads(socket.recv(timeout=60))
                if event.get("type") in ends:
                    last.append(event["type"])
                    break
    assert last == ["response.completed", "response.completed"]
    sent = upstream.bodies("gpt-5.5")[before:]
    assert len(sent) == 2
    assert sent[1]["input"] == recorded


def test_bridge_deployment_restores_reasoning_items(
    upstream: Upstream, client: openai.OpenAI
) -> None:
    """`chat.completions.create` on an `openai/responses/gpt-5` deployment, the client keeping
    role, content and tool calls: the recorded reasoning item goes back (no rs_ id) right
    before the function call."""
    first, second = _cassette("openai_responses_tool_loop")
    upstream.script("gpt-5", _reply(first), _reply(second))
    before = len(upstream.bodies("gpt-5"))
    messages: list[Any] = [
        {"role": "system", "content": _request(first)["instructions"]},
        {"role": "user", "content": _request(first)["input"][0]["content"]},
    ]
    reply = client.chat.completions.create(model="bridge-gpt-5", messages=messages)
    call = reply.choices[0].message.tool_calls[0]  # type: ignore[index]
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},  # type: ignore[union-attr]
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "plan updated"},
    ]
    client.chat.completions.create(model="bridge-gpt-5", messages=messages)
    sent = upstream.bodies("gpt-5")[before:]
    (want,) = [i for i in _request(second)["input"] if i.get("type") == "reasoning"]
    items = sent[1]["input"]
    index = next(i for i, item in enumerate(items) if item.get("type") == "reasoning")
    assert items[index] == {
        "type": "reasoning",
        "summary": want["summary"],
        "encrypted_content": want["encrypted_content"],
    }
    assert items[index + 1]["type"] == "function_call" and items[index + 1]["call_id"] == call.id
    assert "reasoning.encrypted_content" in sent[1]["include"]


@pytest.mark.parametrize("delivery", [False, True], ids=["new-turn", "turn-false"])
def test_v1_responses_turn_rule_under_current_turn(
    upstream: Upstream, client: openai.OpenAI, delivery: bool
) -> None:
    """`/v1/responses` with the `current_turn` policy: the second user message starts a turn
    (turn 1's reasoning item is left out) unless it is flagged `"turn": false`, a delivery
    (then it goes back, as the recorded client sent it). The flag never reaches the wire."""
    first, second = _cassette("openai_responses_multi_turn")
    upstream.script("gpt-5", _reply(first), _reply(second))
    before = len(upstream.bodies("gpt-5"))
    _create(client, "current-turn-gpt-5", _request(first), _request(first)["input"])
    recorded = _request(second)["input"]
    dropped = [copy.deepcopy(item) for item in recorded if item.get("type") != "reasoning"]
    if delivery:
        dropped[-1]["turn"] = False
    _create(client, "current-turn-gpt-5", _request(second), dropped)
    sent = upstream.bodies("gpt-5")[before:]
    assert len(sent) == 2
    assert not any("turn" in item for item in sent[1]["input"])
    if delivery:
        assert sent[1]["input"] == recorded
    else:
        assert sent[1]["input"] == [i for i in recorded if i.get("type") != "reasoning"]


@pytest.mark.parametrize("keep", [False, True], ids=["dropping", "keeping"])
def test_v1_responses_to_a_chat_only_model_restores_the_tool_call_reasoning(
    upstream: Upstream, client: openai.OpenAI, keep: bool
) -> None:
    """`/v1/responses` to DeepSeek (LiteLLM's Responses-to-chat bridge), the official client
    sending the reply's items back with or without its reasoning items: DeepSeek receives the
    tool call's `reasoning_content` (its strict rule refuses the request without)."""
    model = "deepseek-v4-flash"
    chat_only_tool_loop(upstream, model)
    first: list[Json] = [{"role": "user", "content": "Weather in Paris?"}]
    reply = client.responses.create(
        model="chat-only-deepseek",
        input=first,  # type: ignore[arg-type]
        tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
    )
    output = [item.model_dump(exclude_none=True) for item in reply.output]
    second = client.responses.create(
        model="chat-only-deepseek",
        input=next_input(first, output, keep),  # type: ignore[arg-type]
        tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
    )
    assert second.output_text == "Sunny."
    sent = upstream.bodies(model)[-1]["messages"]
    assert sent[1]["reasoning_content"] == "Look up Paris."
    assert upstream.refusals == []
