"""Real OpenAI Responses recordings replayed through real LiteLLM: native `responses` /
`aresponses` and the chat bridge (`openai/responses/<model>`).

Each test plays one cassette from `cassettes/` (built by `cassettes/build_cassettes.py` from
pydantic-ai's recordings against api.openai.com): request 1 as the recorded client sent it, then
request 2 as a client sends it that keeps its message / function_call / function_call_output
items (or, through the chat bridge, role, content and tool calls) but drops reasoning items.
vcrpy answers from the cassette (method + path) and the tests read the bodies LiteLLM's HTTP
client really sent.

Expected reasoning items come from the recordings: the request the recorded client sent after
the reply (and the API accepted with 200), and the raw reply (JSON `output`, or the SSE
`response.output_item.done` events), never from LiteLLM or the callback.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from cassette_utils import replay
from conftest import settled
from paths import REPO

from litellm_reasoning import ReasoningCallback

CASSETTES = REPO / "cassettes"
Json = dict[str, Any]
ENCRYPTED = "reasoning.encrypted_content"

NATIVE = ("openai_responses_tool_loop", "openai_responses_stream_tool_call")
ALL = (*NATIVE, "openai_responses_multi_turn")


# ---------------------------------------------------------------- reading the recordings


def _text(body: Any) -> str:
    if isinstance(body, bytes):
        return body.decode("utf-8")
    return "" if body is None else str(body)


def _load(name: str) -> Json:
    import yaml

    data: Json = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text(encoding="utf-8"))
    return data


def script(name: str) -> Json:
    data: Json = json.loads((CASSETTES / "scripts" / f"{name}.json").read_text(encoding="utf-8"))
    return data


def recorded_output(name: str, j: int) -> list[Json]:
    """Reply `j`'s output items as the provider sent them; for SSE, each as its
    `response.output_item.done` event carried it."""
    response = _load(name)["interactions"][j]["response"]
    body = response["body"]["string"]
    if "text/event-stream" not in ";".join(response["headers"].get("content-type") or []):
        output: list[Json] = json.loads(body)["output"]
        return output
    done: dict[int, Json] = {}
    for line in body.splitlines():
        if line.startswith("data:"):
            event = json.loads(line[5:])
            if event.get("type") == "response.output_item.done":
                done[event["output_index"]] = event["item"]
    return [done[i] for i in sorted(done)]


def recorded_reasoning(name: str, k: int) -> list[Json]:
    """The reasoning items the recorded client sent in request `k` (accepted by the API)."""
    body = script(name)["requests"][k]["body"]
    return [item for item in body["input"] if item.get("type") == "reasoning"]


def completed_reasoning(name: str, j: int) -> list[Json]:
    """Reply `j`'s reasoning items as its SSE `response.completed` event carried them."""
    body = _load(name)["interactions"][j]["response"]["body"]["string"]
    for line in body.splitlines():
        if line.startswith("data:"):
            event = json.loads(line[5:])
            if event.get("type") == "response.completed":
                output: list[Json] = event["response"]["output"]
                return [item for item in output if item.get("type") == "reasoning"]
    raise AssertionError(f"{name}: reply {j} has no response.completed event")


# ---------------------------------------------------------------- the client side


def dropping_input(name: str, k: int, *, keep_ids: bool = True) -> list[Json]:
    """Request `k`'s input as a client that drops reasoning items sends it: the recorded input,
    each echoed item as the reply carried it (its text, from the recording's own reply),
    reasoning items left out and, with `keep_ids=False`, item ids too."""
    request = script(name)["requests"][k]
    items = copy.deepcopy(request["body"]["input"])
    for index, (j, o) in request["echoes"].items():
        produced = recorded_output(name, j)[o]
        item = items[int(index)]
        if item.get("type") == "message":
            # pydantic-ai normalised the recorded request's text (README); a client sends the
            # reply's own text back.
            for part, source in zip(item["content"], produced["content"], strict=True):
                part["text"] = source["text"]
    out = [item for item in items if item.get("type") != "reasoning"]
    if not keep_ids:
        out = [{k: v for k, v in item.items() if k != "id"} for item in out]
    return out


def expected_input(name: str, k: int, *, rs_ids: bool, keep_ids: bool = True) -> list[Json]:
    """What the provider must receive: the dropping client's items with the recorded client's
    reasoning items back before the item they preceded (their `rs_` ids only where stated)."""
    request = script(name)["requests"][k]["body"]["input"]
    kept = iter(dropping_input(name, k, keep_ids=keep_ids))
    out: list[Json] = []
    for item in request:
        if item.get("type") == "reasoning":
            out.append(item if rs_ids else {key: v for key, v in item.items() if key != "id"})
        else:
            out.append(next(kept))
    return out


def native_kwargs(name: str, k: int, items: list[Json], **extra: Any) -> Json:
    body = script(name)["requests"][k]["body"]
    kwargs = {key: v for key, v in body.items() if key not in ("model", "input", "include")}
    kwargs.update(model=f"openai/{body['model']}", input=items, api_key="replay-without-a-key")
    if body.get("include"):
        kwargs["include"] = body["include"]
    kwargs.update(extra)
    return kwargs


async def native_call(mode: str, kwargs: Json) -> None:
    """One native Responses call, its stream read to the end."""
    if mode == "async":
        response = await litellm.aresponses(**kwargs)
        if kwargs.get("stream"):
            async for _ in response:
                pass
    elif mode == "router.async":
        params = {"model": kwargs["model"], "api_key": kwargs["api_key"]}
        router = litellm.Router(
            model_list=[{"model_name": "gpt", "litellm_params": params}], num_retries=0
        )
        rest = {k: v for k, v in kwargs.items() if k not in params}
        response = await router.aresponses(model="gpt", **rest)
        if kwargs.get("stream"):
            async for _ in response:
                pass
    else:
        response = litellm.responses(**kwargs)
        if kwargs.get("stream"):
            for _ in response:
                pass


@pytest.fixture
def cb() -> Iterator[ReasoningCallback]:
    litellm.logging_callback_manager._reset_all_callbacks()
    callback = ReasoningCallback()
    litellm.callbacks = [callback]
    yield callback
    litellm.logging_callback_manager._reset_all_callbacks()


# ---------------------------------------------------------------- native Responses API


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("mode", ["async", "router.async", "sync"])
async def test_native_restores_dropped_reasoning_items(
    cb: ReasoningCallback, name: str, mode: str
) -> None:
    """A client that drops reasoning items: request 2 reaches the provider exactly as the
    recorded client sent it (reasoning items, encrypted_content byte for byte, their `rs_` ids
    paired with the `fc_` / `msg_` ids the client kept), `include` as asked.

    Sync streams: LiteLLM runs no per-event hook there, so the reply is captured from its
    `response.completed` event, whose reasoning item is a different encryption of the same
    item than `response.output_item.done`'s (the one the recorded client sent)."""
    first = script(name)["requests"][0]["body"]
    with replay(name) as wire:
        await native_call(mode, native_kwargs(name, 0, first["input"]))
        await native_call(mode, native_kwargs(name, 1, dropping_input(name, 1)))
    expected = expected_input(name, 1, rs_ids=True)
    if mode == "sync" and first.get("stream"):
        (completed,) = completed_reasoning(name, 0)
        for item in expected:
            if item.get("type") == "reasoning":
                item["encrypted_content"] = completed["encrypted_content"]
    assert wire.bodies[1]["input"] == expected
    assert len(recorded_reasoning(name, 1)) == 1
    assert wire.bodies[1]["include"] == [ENCRYPTED]
    assert cb.stats["captured"] >= 1 and cb.stats["restored"] == 1


@pytest.mark.parametrize("name", NATIVE)
async def test_native_store_false_sends_no_rs_ids(cb: ReasoningCallback, name: str) -> None:
    """`store: false`: an `rs_` id would be a 404 (never persisted), so the item goes back with
    its encrypted_content only."""
    with replay(name) as wire:
        first = script(name)["requests"][0]["body"]["input"]
        await native_call("async", native_kwargs(name, 0, first, store=False))
        await native_call("async", native_kwargs(name, 1, dropping_input(name, 1), store=False))
    sent = wire.bodies[1]
    assert sent["store"] is False
    assert sent["input"] == expected_input(name, 1, rs_ids=False)
    assert not any(str(item.get("id", "")).startswith("rs_") for item in sent["input"])


@pytest.mark.parametrize("name", NATIVE)
async def test_native_client_without_item_ids_gets_no_rs_ids(
    cb: ReasoningCallback, name: str
) -> None:
    """A client that keeps no item ids: an `rs_` id followed by an id-less item is the recorded
    400 ("…was provided without its required following item"), so none is sent."""
    with replay(name) as wire:
        first = script(name)["requests"][0]["body"]["input"]
        await native_call("async", native_kwargs(name, 0, first))
        items = dropping_input(name, 1, keep_ids=False)
        await native_call("async", native_kwargs(name, 1, items))
    assert wire.bodies[1]["input"] == expected_input(name, 1, rs_ids=False, keep_ids=False)


async def test_native_keeping_client_is_sent_unchanged(cb: ReasoningCallback) -> None:
    name = "openai_responses_tool_loop"
    with replay(name) as wire:
        for k in (0, 1):
            body = script(name)["requests"][k]["body"]
            await native_call("async", native_kwargs(name, k, body["input"]))
    assert wire.bodies[1]["input"] == script(name)["requests"][1]["body"]["input"]
    assert cb.stats["restored"] == 0


async def test_native_turn_flag_never_reaches_the_wire(cb: ReasoningCallback) -> None:
    """The new user question of turn 2 flagged `turn: false` (a delivery) and `true`: neither
    flag is sent; the reasoning item is restored either way (earlier turns are kept)."""
    name = "openai_responses_multi_turn"
    with replay(name) as wire:
        await native_call(
            "async",
            native_kwargs(
                name, 0, [{**script(name)["requests"][0]["body"]["input"][0], "turn": True}]
            ),
        )
        items = dropping_input(name, 1)
        items[-1] = {**items[-1], "turn": False}
        await native_call("async", native_kwargs(name, 1, items))
    assert not any("turn" in item for body in wire.bodies for item in body["input"])
    assert wire.bodies[1]["input"] == expected_input(name, 1, rs_ids=True)


async def test_native_current_turn_policy_leaves_earlier_turns_out(cb: ReasoningCallback) -> None:
    """With the `current_turn` policy an earlier turn's reasoning is not restored."""
    litellm.logging_callback_manager._reset_all_callbacks()
    callback = ReasoningCallback(policies={"gpt-5": "current_turn"})
    litellm.callbacks = [callback]
    name = "openai_responses_multi_turn"
    with replay(name) as wire:
        await native_call(
            "async", native_kwargs(name, 0, script(name)["requests"][0]["body"]["input"])
        )
        await native_call("async", native_kwargs(name, 1, dropping_input(name, 1)))
    assert wire.bodies[1]["input"] == dropping_input(name, 1)
    assert callback.stats["restored"] == 0


GPT6 = "gpt-6-sol-contexts"
"""A GPT-6 model as LiteLLM 1.110's map has `gpt-6-sol` (`reasoning_contexts` auto, current_turn,
all_turns), registered under its own name so every LiteLLM line knows it the same way."""
GPT5 = "gpt-5-contexts"
"""A model that takes `auto` and `current_turn` only (LiteLLM's map for gpt-5 to 5.3)."""


@pytest.fixture(scope="module", autouse=True)
def registered_models() -> None:
    for name, contexts in (
        (GPT6, ["auto", "current_turn", "all_turns"]),
        (GPT5, ["auto", "current_turn"]),
    ):
        litellm.register_model(
            {
                name: {
                    "litellm_provider": "openai",
                    "mode": "responses",
                    "reasoning_contexts": contexts,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                }
            }
        )


async def _multi_turn(model: str, second: list[Json] | None = None, **extra: Any) -> list[Json]:
    """The recorded two-turn conversation sent to `model` (its reply replayed), the second
    request as a dropping client sends it (or `second`); the bodies that reached the wire."""
    name = "openai_responses_multi_turn"
    with replay(name) as wire:
        first = script(name)["requests"][0]["body"]["input"]
        later = second if second is not None else dropping_input(name, 1)
        for k, items in enumerate((first, later)):
            await native_call(
                "async", native_kwargs(name, k, items, model=f"openai/{model}", **extra)
            )
    bodies: list[Json] = wire.bodies
    return bodies


@pytest.mark.parametrize(
    ("settings", "context", "restored"),
    [({}, "all_turns", True), ({"policies": {"gpt-6*": "current_turn"}}, "current_turn", False)],
    ids=["default", "current_turn"],
)
async def test_gpt6_is_told_the_reasoning_context_the_policy_restores(
    settings: Json, context: str, restored: bool
) -> None:
    """GPT-6 takes `reasoning.context`: a client that says nothing gets the value of what the
    policy sends, so the model reads the earlier reasoning it is given (`auto` would leave it
    to the model). The client's other `reasoning` fields stay."""
    litellm.logging_callback_manager._reset_all_callbacks()
    callback = ReasoningCallback(**settings)
    litellm.callbacks = [callback]
    try:
        bodies = await _multi_turn(GPT6)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    name = "openai_responses_multi_turn"
    assert bodies[1]["reasoning"] == {"effort": "high", "summary": "detailed", "context": context}
    want = expected_input(name, 1, rs_ids=True) if restored else dropping_input(name, 1)
    assert bodies[1]["input"] == want
    assert bodies[1]["include"] == [ENCRYPTED]


async def test_all_turns_is_not_said_when_an_item_lacks_its_reasoning() -> None:
    """The first reply was never captured (no callback then): the earlier message goes without
    its reasoning item. Told `all_turns`, the API would refuse it ("Item … of type 'message' was
    provided without its required 'reasoning' item"), so the client's `reasoning` goes as sent
    (`auto`): the callback never turns a miss into a failure."""
    name = "openai_responses_multi_turn"
    litellm.logging_callback_manager._reset_all_callbacks()
    callback = ReasoningCallback()
    try:
        with replay(name) as wire:
            first = script(name)["requests"][0]["body"]["input"]
            await native_call("async", native_kwargs(name, 0, first, model=f"openai/{GPT6}"))
            litellm.callbacks = [callback]  # only now: the first reply was not captured
            later = native_kwargs(name, 1, dropping_input(name, 1), model=f"openai/{GPT6}")
            await native_call("async", later)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert wire.bodies[1]["reasoning"] == {"effort": "high", "summary": "detailed"}
    assert callback.stats["missing"] >= 1


async def test_a_clients_reasoning_context_is_kept_and_narrows_what_is_restored(
    cb: ReasoningCallback,
) -> None:
    """The client limits GPT-6 to the current turn's reasoning: its value goes as sent, and the
    earlier turn's item is not restored (it would be paid for and not read)."""
    asked = {"effort": "high", "summary": "detailed", "context": "current_turn"}
    bodies = await _multi_turn(GPT6, reasoning=asked)
    assert bodies[1]["reasoning"] == asked
    assert bodies[1]["input"] == dropping_input("openai_responses_multi_turn", 1)
    assert cb.stats["restored"] == 0


async def test_a_model_that_does_not_take_the_value_is_not_sent_it(cb: ReasoningCallback) -> None:
    """A model whose map entry takes `auto` and `current_turn` only: the default policy
    (every turn) has no value it takes, so `reasoning` goes as the client sent it."""
    bodies = await _multi_turn(GPT5)
    assert bodies[1]["reasoning"] == {"effort": "high", "summary": "detailed"}
    assert bodies[1]["input"] == expected_input("openai_responses_multi_turn", 1, rs_ids=True)


async def test_reasoning_is_not_restored_into_a_changed_prefix(cb: ReasoningCallback) -> None:
    """The client edited the first user message: the earlier reply's reasoning item answered
    another conversation and is not restored into this one."""
    edited = copy.deepcopy(dropping_input("openai_responses_multi_turn", 1))
    first = edited[0]
    first["content"] = (
        first["content"] + " (edited)"
        if isinstance(first["content"], str)
        else [*first["content"], {"type": "input_text", "text": "(edited)"}]
    )
    bodies = await _multi_turn(GPT6, second=edited)
    assert bodies[1]["input"] == edited
    assert cb.stats["restored"] == 0
    assert "context" not in bodies[1]["reasoning"]  # an item without its reasoning: not all_turns


def _decisions(caplog: pytest.LogCaptureFixture) -> list[Json]:
    prefix = "litellm-reasoning decisions: "
    return [
        json.loads(r.getMessage()[len(prefix) :])
        for r in caplog.records
        if r.getMessage().startswith(prefix)
    ]


async def test_native_request_has_a_decisions_summary(
    cb: ReasoningCallback, caplog: pytest.LogCaptureFixture
) -> None:
    """Native Responses gets the decisions summary chat calls get (one DEBUG line, the same
    schema, keyed by input item): the restored item, and the tokens it carries."""
    name = "openai_responses_tool_loop"
    caplog.set_level("DEBUG", logger="litellm_reasoning")
    with replay(name) as wire:
        first = script(name)["requests"][0]["body"]["input"]
        await native_call("async", native_kwargs(name, 0, first))
        await native_call("async", native_kwargs(name, 1, dropping_input(name, 1)))
    summary = _decisions(caplog)[-1]
    restored_before = [
        str(i)
        for i, item in enumerate(dropping_input(name, 1))
        if i > 0 and wire.bodies[1]["input"][i].get("type") == "reasoning"
    ]
    assert summary["dialect"] == "openai_responses"
    assert summary["counts"]["restored"] == 1 == cb.stats["restored"]
    assert list(summary["messages"].values()) == ["restored"]
    assert list(summary["messages"]) == restored_before
    (item,) = recorded_reasoning(name, 1)
    assert summary["reasoning_tokens"]["sent"] >= len(item["encrypted_content"]) // 4 > 0


async def test_native_budget_leaves_earlier_turns_out_oldest_first(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`max_reasoning_tokens` holds for native Responses too: an earlier turn's restored
    reasoning item is left out (counted `over_budget`), the current turn is never touched."""
    litellm.logging_callback_manager._reset_all_callbacks()
    callback = ReasoningCallback(max_reasoning_tokens=1)
    litellm.callbacks = [callback]
    caplog.set_level("DEBUG", logger="litellm_reasoning")
    name = "openai_responses_multi_turn"
    with replay(name) as wire:
        await native_call(
            "async", native_kwargs(name, 0, script(name)["requests"][0]["body"]["input"])
        )
        await native_call("async", native_kwargs(name, 1, dropping_input(name, 1)))
    litellm.logging_callback_manager._reset_all_callbacks()
    assert wire.bodies[1]["input"] == dropping_input(name, 1)  # the earlier turn's item: out
    assert callback.stats["over_budget"] == 1 and callback.stats["restored"] == 0
    summary = _decisions(caplog)[-1]
    assert summary["counts"]["over_budget"] == 1
    assert summary["reasoning_tokens"]["saved"] > 0 == summary["reasoning_tokens"]["sent"]


async def test_native_budget_leaves_unread_what_it_leaves_out(tmp_path: Any) -> None:
    """On a worker that never saw the conversation (a new callback on the same SQLite file),
    the budget decides from the sizes kept beside the records: the earlier turn's item is
    never read, and the wire is the one above (the item left out)."""
    from litellm_reasoning.stores import ResilientStore

    url = f"sqlite:///{tmp_path / 'store.db'}"
    name = "openai_responses_multi_turn"
    litellm.logging_callback_manager._reset_all_callbacks()
    writer = ReasoningCallback(store=url)
    litellm.callbacks = [writer]
    with replay(name) as wire:
        await native_call(
            "async", native_kwargs(name, 0, script(name)["requests"][0]["body"]["input"])
        )
        await settled(writer)
        assert writer.stats["captured"] == 1
        cold = ReasoningCallback(store=url, max_reasoning_tokens=1)
        litellm.callbacks = [cold]
        await native_call("async", native_kwargs(name, 1, dropping_input(name, 1)))
    litellm.logging_callback_manager._reset_all_callbacks()
    assert wire.bodies[1]["input"] == dropping_input(name, 1)
    assert isinstance(cold.store, ResilientStore)
    assert cold.store.stats["records_read"] == 0
    assert cold.stats["unread_over_budget"] == 1 == cold.stats["over_budget"]
    assert cold.stats["restored"] == 0 and cold.stats["missing"] == 0


@pytest.mark.parametrize(
    ("provider", "second_base"),
    [
        ("hosted_vllm", "http://vllm-a.internal:8000/v1"),
        ("hosted_vllm", "http://vllm-b.internal:8000/v1"),
        ("xai", "https://api.x.ai/v1"),
    ],
)
async def test_native_responses_of_vllm_and_xai_go_back_to_their_issuer(
    provider: str, second_base: str
) -> None:
    """vLLM's and xAI's Responses APIs (the recorded exchange replayed as theirs): the reasoning
    item a dropping client left out goes back before the item it preceded, and `include` asks
    for it. A vLLM blob goes back only to the server that made it (its api_base is part of the
    issuer, the credentials alike): the same model behind another vLLM gets none."""
    first_base = "http://vllm-a.internal:8000/v1" if provider == "hosted_vllm" else second_base
    name = "openai_responses_multi_turn"
    litellm.logging_callback_manager._reset_all_callbacks()
    callback = ReasoningCallback()
    litellm.callbacks = [callback]
    model = script(name)["requests"][0]["body"]["model"]
    route = {"model": f"{provider}/{model}", "api_key": "same-key"}
    with replay(name) as wire:
        await native_call(
            "async",
            native_kwargs(
                name,
                0,
                script(name)["requests"][0]["body"]["input"],
                **route,
                api_base=first_base,
            ),
        )
        await settled(callback)
        assert callback.stats["captured"] == 1
        await native_call(
            "async",
            native_kwargs(name, 1, dropping_input(name, 1), **route, api_base=second_base),
        )
    litellm.logging_callback_manager._reset_all_callbacks()
    assert "reasoning.encrypted_content" in wire.bodies[0].get("include", [])
    sent = [item for item in wire.bodies[1]["input"] if item.get("type") == "reasoning"]
    if second_base == first_base:
        assert sent == recorded_reasoning(name, 1)  # as the recorded client sent it
        assert callback.stats["restored"] == 1 and callback.stats["foreign_origin"] == 0
    else:  # another vLLM server: never another's blob
        assert sent == []
        assert callback.stats["restored"] == 0 and callback.stats["foreign_origin"] == 1


# ---------------------------------------------------------------- the chat bridge


def chat_request(name: str, k: int, replies: list[Json]) -> Json:
    """Chat request `k` as a client sends it that keeps role, content and tool calls only: each
    echoed assistant message rebuilt from LiteLLM's reply, tool results renamed along."""
    chat = copy.deepcopy(script(name)["requests"][k]["chat"])
    messages: list[Json] = chat["body"]["messages"]
    for index, j in chat["echoes"].items():
        reply = replies[j]
        message: Json = {"role": "assistant", "content": reply.get("content")}
        if reply.get("tool_calls"):
            message["tool_calls"] = [
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
        messages[int(index)] = message
    for message in messages:
        message.pop("reasoning_items", None)
    return {**chat["body"], "model": f"openai/{chat['body']['model']}"}


async def bridge_call(mode: str, kwargs: Json) -> Json:
    kwargs = {**kwargs, "api_key": "replay-without-a-key"}
    if mode == "router.async":
        router = litellm.Router(
            model_list=[
                {
                    "model_name": "gpt",
                    "litellm_params": {"model": kwargs["model"], "api_key": kwargs["api_key"]},
                }
            ],
            num_retries=0,
        )
        kwargs = {k: v for k, v in kwargs.items() if k not in ("model", "api_key")} | {
            "model": "gpt"
        }
        response = await router.acompletion(**kwargs)
    elif mode == "sync":
        response = litellm.completion(**kwargs)
        if kwargs.get("stream"):
            response = litellm.stream_chunk_builder(list(response))
        sync: Json = response.choices[0].message.model_dump()
        return sync
    else:
        response = await litellm.acompletion(**kwargs)
    if kwargs.get("stream"):
        chunks = [chunk async for chunk in response]
        built = litellm.stream_chunk_builder(chunks)
        assert built is not None
        message = built.choices[0].message
    else:
        message = response.choices[0].message
    data: Json = message.model_dump()
    return data


def _anchor_of(name: str) -> tuple[str, str]:
    """(type, role or call id) of the item the recorded reasoning item preceded in request 2."""
    items = script(name)["requests"][1]["body"]["input"]
    index = next(i for i, item in enumerate(items) if item.get("type") == "reasoning")
    anchor = items[index + 1]
    return anchor.get("type", "message"), anchor.get("call_id") or anchor.get("role")


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("mode", ["async", "router.async", "sync"])
async def test_bridge_restores_reasoning_items(cb: ReasoningCallback, name: str, mode: str) -> None:
    """`openai/responses/<model>` from a client that drops reasoning: request 2 carries the
    recorded reasoning item (encrypted_content and summary byte for byte, no `rs_` id: the
    bridge sends the following item without its id) right before the item it preceded, and
    both requests ask for encrypted content. Streamed when the recording is.

    Sync calls are rendered by the Responses hook LiteLLM runs for the bridge's inner
    `responses` call; a sync stream is captured from `response.completed` (see
    `test_native_restores_dropped_reasoning_items`)."""
    with replay(name) as wire:
        reply = await bridge_call(mode, chat_request(name, 0, []))
        await bridge_call(mode, chat_request(name, 1, [reply]))
    for body in wire.bodies:
        assert ENCRYPTED in body["include"]
    sent = wire.bodies[1]["input"]
    reasoning = [i for i, item in enumerate(sent) if item.get("type") == "reasoning"]
    (want,) = recorded_reasoning(name, 1)
    if mode == "sync" and script(name)["requests"][0]["body"].get("stream"):
        want = {**want, "encrypted_content": completed_reasoning(name, 0)[0]["encrypted_content"]}
    assert len(reasoning) == 1
    item = sent[reasoning[0]]
    assert item == {
        "type": "reasoning",
        "summary": want["summary"],
        "encrypted_content": want["encrypted_content"],
    }
    kind, anchor = _anchor_of(name)
    following = sent[reasoning[0] + 1]
    assert following.get("type") == kind
    assert (following.get("call_id") or following.get("role")) == anchor
    assert cb.stats["restored"] == 1


async def test_bridge_keeping_client_sends_its_items_without_ids(cb: ReasoningCallback) -> None:
    """A client that keeps `reasoning_items` (with their `rs_` ids, as LiteLLM returned them):
    sent as they are, minus the id the bridge cannot pair."""
    name = "openai_responses_tool_loop"
    with replay(name) as wire:
        reply = await bridge_call("async", chat_request(name, 0, []))
        request = chat_request(name, 1, [reply])
        request["messages"][2]["reasoning_items"] = reply["reasoning_items"]
        await bridge_call("async", request)
    (want,) = recorded_reasoning(name, 1)
    sent = [item for item in wire.bodies[1]["input"] if item.get("type") == "reasoning"]
    assert sent == [
        {
            "type": "reasoning",
            "summary": want["summary"],
            "encrypted_content": want["encrypted_content"],
        }
    ]
    assert cb.stats["restored"] == 0


async def test_bridge_include_is_merged_with_the_callers(cb: ReasoningCallback) -> None:
    name = "openai_responses_multi_turn"
    with replay(name) as wire:
        request = chat_request(name, 0, [])
        reply = await bridge_call("async", {**request, "include": ["message.output_text.logprobs"]})
        await bridge_call(
            "async",
            {
                **chat_request(name, 1, [reply]),
                "extra_body": {"include": ["message.output_text.logprobs"]},
            },
        )
    for body in wire.bodies:
        assert body["include"] == ["message.output_text.logprobs", ENCRYPTED]


async def test_native_edited_message_gets_no_reasoning_item(cb: ReasoningCallback) -> None:
    """The recorded client sent turn 1's reasoning item (with its `rs_` id) before an edited,
    id-less assistant message and got 400 "…was provided without its required following item";
    then the edited history without reasoning items, and got 200. A client that drops reasoning
    and edits the message: nothing is restored before it (its identity changed), both times.
    (The cassette answers request 2 with the recorded 400 whatever is sent.)"""
    name = "openai_responses_modified_history"
    requests = script(name)["requests"]
    with replay(name) as wire:
        await native_call("async", native_kwargs(name, 0, requests[0]["body"]["input"]))
        edited = [i for i in requests[1]["body"]["input"] if i.get("type") != "reasoning"]
        with pytest.raises(litellm.BadRequestError, match="required following item"):
            await native_call("async", native_kwargs(name, 1, edited))
        await native_call("async", native_kwargs(name, 2, requests[2]["body"]["input"]))
    assert wire.bodies[1]["input"] == edited
    assert wire.bodies[2]["input"] == requests[2]["body"]["input"]
    await settled(cb)
    assert cb.stats["captured"] == 2 and cb.stats["restored"] == 0
