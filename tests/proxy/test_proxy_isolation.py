"""Load and isolation through the real LiteLLM proxy: several end users (`user=`), each with
several conversations, all at once, from the official `openai` client that drops reasoning.

Every end user sends the SAME prompts with the SAME tool-call ids as every other end user (only
the scope tells them apart); the two conversations of one end user differ in their tool-call ids
(within one scope, identical content is one conversation). Each conversation's upstream reasoning
is unique, and each conversation has its own model group, so the local upstream's per-model
scripts can never hand one conversation another's reply whatever order the threads run in.
Asserted on what the upstream received: every step-2 request carries exactly its own
conversation's step-1 reasoning, none other.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest
from proxy_utils import (
    TOOLS,
    Proxy,
    assert_no_turn_key,
    assistant_messages,
    chat,
    openai_compatible_deployment,
    proxy_config,
    run_proxy,
    text_reply,
    tool_reply,
    upstream_model,
    wire_ids,
)
from reliability_utils import CutServer, Plan, openrouter_stream, recorded_events

from litellm_reasoning.testing.upstream import Reply, Upstream

pytestmark = pytest.mark.proxy

USERS = ("ada", "bo", "cy", "di")
CONVERSATIONS = 2
GROUPS = [f"iso-{user}-{c}" for user in USERS for c in range(CONVERSATIONS)]
OPENROUTER_MODELS = {"alice": "anthropic/claude-sonnet-4.5", "bob": "anthropic/claude-opus-4.5"}
"""One OpenRouter deployment per tenant, both served by `CutServer` with ONE chunk id."""
CUT = "iso-cut"
"""A model group whose upstream stalls mid-stream (`CutServer`)."""
SHARED = "iso-shared"
"""One model group every conversation uses at once; `ByContent` answers each by its content."""


class ByContent(Upstream):
    """The local upstream, answering by what a request says rather than by arrival order:
    `(task prompt, step)` -> reply, where step 1 is a request without a tool result. Concurrent
    conversations on one model group then each get their own scripted replies. (LiteLLM does
    not forward `user` to an OpenAI-compatible upstream, so the prompt names the end user.)"""

    def __init__(self) -> None:
        super().__init__()
        self.by_content: dict[tuple[str, int], Reply] = {}

    @staticmethod
    def conversation(body: dict[str, Any]) -> tuple[str, int]:
        messages = body.get("messages") or []
        prompt = next((m.get("content") for m in messages if m.get("role") == "user"), "")
        step = 2 if any(m.get("role") == "tool" for m in messages) else 1
        return str(prompt), step

    def answer(self, body: dict[str, Any], reply: Reply | None) -> tuple[int, str, bytes]:
        return super().answer(body, self.by_content.get(self.conversation(body), reply))


@pytest.fixture(scope="module")
def upstream() -> Iterator[ByContent]:
    with ByContent() as up:
        yield up


@pytest.fixture(scope="module")
def cut_server() -> Iterator[CutServer]:
    with CutServer() as running:
        yield running


@pytest.fixture(scope="module")
def proxy(
    upstream: ByContent, cut_server: CutServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxy]:
    config = proxy_config(
        [
            *(
                openai_compatible_deployment(group, upstream_model(group), upstream.base_url)
                for group in [*GROUPS, SHARED]
            ),
            openai_compatible_deployment(CUT, upstream_model(CUT), cut_server.base_url),
            *(
                {
                    "model_name": f"or-{tenant}",
                    "litellm_params": {
                        "model": f"openrouter/{model}",
                        "api_base": cut_server.base_url,
                        "api_key": "k",
                    },
                }
                for tenant, model in OPENROUTER_MODELS.items()
            ),
        ]
    )
    with run_proxy(
        config, tmp_path_factory.mktemp("proxy-iso"), env={"LITELLM_REASONING_STORE": "memory://"}
    ) as running:
        yield running


def _conversation(
    proxy: Proxy, upstream: ByContent, user: str, number: int, start: threading.Barrier
) -> tuple[str, str, dict[str, Any]]:
    """A 2-step tool loop; returns (group, its step-1 reasoning, the step-2 body received)."""
    group = f"iso-{user}-{number}"
    model = upstream_model(group)
    call_id = f"call_shared_{number}"  # identical across end users
    reasoning = f"private reasoning of {user} #{number}: {uuid.uuid4().hex}"
    upstream.script(
        model,
        tool_reply(reasoning, call_id, "Paris"),
        text_reply(f"answer reasoning {user} #{number}", "Sunny."),
    )
    stream = number % 2 == 1
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": f"Weather in Paris? (task {number})"},
    ]
    with openai.OpenAI(
        base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
    ) as client:
        start.wait(timeout=60)
        first = chat(client, group, history, stream=stream, tools=TOOLS, user=user)
        assert first.reasoning_content == reasoning
        history += [
            first.as_history(),  # reasoning dropped, as the openai SDK does
            {"role": "tool", "tool_call_id": call_id, "content": "Sunny, 24 C"},
        ]
        chat(client, group, history, stream=stream, tools=TOOLS, user=user)
    bodies = upstream.bodies(model)
    assert len(bodies) == 2, bodies
    return group, reasoning, bodies[1]


def test_concurrent_end_users_each_restore_only_their_own(proxy: Proxy, upstream: Upstream) -> None:
    jobs = [(user, c) for user in USERS for c in range(CONVERSATIONS)]
    start = threading.Barrier(len(jobs))
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(_conversation, proxy, upstream, u, c, start) for u, c in jobs]
        results = [f.result(timeout=180) for f in futures]

    every_reasoning = {reasoning for _, reasoning, _ in results}
    assert len(every_reasoning) == len(jobs)
    wrong = []
    for group, mine, body in results:
        assert_no_turn_key(body)
        (assistant,) = assistant_messages(body)
        assert wire_ids(assistant) == [f"call_shared_{group[-1]}"]
        sent = assistant.get("reasoning_content")
        if sent != mine:
            wrong.append((group, mine, sent))
        # No other conversation's reasoning anywhere in the body.
        text = repr(body)
        leaked = [r for r in every_reasoning - {mine} if r in text]
        assert not leaked, (group, leaked)
    assert not wrong, f"step 2 did not carry its own step-1 reasoning: {wrong}\n{proxy.log_tail()}"


def _shared_conversation(
    proxy: Proxy, upstream: ByContent, user: str, number: int, start: threading.Barrier
) -> tuple[str, str, dict[str, Any]]:
    """A 2-step tool loop on the shared model group; the step-2 body is found by its content."""
    call_id = f"call_shared_{number}"
    prompt = f"Weather in Rome? ({user}, shared task {number})"
    reasoning = f"shared-group reasoning of {user} #{number}: {uuid.uuid4().hex}"
    upstream.by_content[(prompt, 1)] = tool_reply(reasoning, call_id, "Rome")
    upstream.by_content[(prompt, 2)] = text_reply(f"answer {user} #{number}", "Rainy.")
    stream = number % 2 == 1
    history: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    with openai.OpenAI(
        base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
    ) as client:
        start.wait(timeout=60)
        first = chat(client, SHARED, history, stream=stream, tools=TOOLS, user=user)
        assert first.reasoning_content == reasoning
        history += [
            first.as_history(),
            {"role": "tool", "tool_call_id": call_id, "content": "Rainy, 17 C"},
        ]
        chat(client, SHARED, history, stream=stream, tools=TOOLS, user=user)
    step_two = [
        b
        for b in upstream.bodies(upstream_model(SHARED))
        if upstream.conversation(b) == (prompt, 2)
    ]
    assert len(step_two) == 1, step_two
    return f"{user}-{number}", reasoning, step_two[0]


def test_concurrent_end_users_on_one_model_group(proxy: Proxy, upstream: ByContent) -> None:
    """The same, with every conversation on ONE deployment at once (the usual gateway case).
    Tool-call ids are still shared across end users; the prompts differ (they name the end
    user, so the upstream can answer each conversation with its own script)."""
    jobs = [(user, c) for user in USERS for c in range(CONVERSATIONS)]
    start = threading.Barrier(len(jobs))
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(_shared_conversation, proxy, upstream, u, c, start) for u, c in jobs]
        results = [f.result(timeout=180) for f in futures]
    every_reasoning = {reasoning for _, reasoning, _ in results}
    wrong = []
    for name, mine, body in results:
        (assistant,) = assistant_messages(body)
        assert wire_ids(assistant) == [f"call_shared_{name[-1]}"]
        if assistant.get("reasoning_content") != mine:
            wrong.append((name, mine, assistant.get("reasoning_content")))
        leaked = [r for r in every_reasoning - {mine} if r in repr(body)]
        assert not leaked, (name, leaked)
    assert not wrong, f"step 2 did not carry its own step-1 reasoning: {wrong}\n{proxy.log_tail()}"


def test_a_client_chosen_call_id_neither_crosses_end_users_nor_loses_captures(
    proxy: Proxy, upstream: ByContent
) -> None:
    """Every request sends the same `x-litellm-call-id` (a client reusing its trace id), two end
    users at once with the same tool-call id, each with two conversations one after the other:
    every step-2 request carries exactly its own conversation's step-1 reasoning."""
    headers = {"x-litellm-call-id": "client-chosen-trace-id"}

    def run(user: str) -> list[tuple[str, Any]]:
        out = []
        with openai.OpenAI(
            base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
        ) as client:
            for number in range(2):
                prompt = f"Weather in Oslo? ({user}, trace task {number})"
                mine = f"trace reasoning of {user} #{number}: {uuid.uuid4().hex}"
                upstream.by_content[(prompt, 1)] = tool_reply(mine, "call_trace", "Oslo")
                upstream.by_content[(prompt, 2)] = text_reply("answer", "Cold.")
                history: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
                stream = number == 1
                first = chat(
                    client,
                    SHARED,
                    history,
                    stream=stream,
                    tools=TOOLS,
                    user=user,
                    extra_headers=headers,
                )
                assert first.reasoning_content == mine
                history += [
                    first.as_history(),
                    {"role": "tool", "tool_call_id": "call_trace", "content": "Cold"},
                ]
                chat(
                    client,
                    SHARED,
                    history,
                    stream=stream,
                    tools=TOOLS,
                    user=user,
                    extra_headers=headers,
                )
                (body,) = [
                    b
                    for b in upstream.bodies(upstream_model(SHARED))
                    if upstream.conversation(b) == (prompt, 2)
                ]
                (assistant,) = assistant_messages(body)
                out.append((mine, assistant.get("reasoning_content")))
        return out

    with ThreadPoolExecutor(2) as pool:
        results = [r for f in [pool.submit(run, u) for u in ("eve", "fay")] for r in f.result()]
    wrong = [(mine, sent) for mine, sent in results if sent != mine]
    assert not wrong, f"{wrong}\n{proxy.log_tail()}"


def test_a_client_that_disconnects_mid_stream_leaves_nothing_to_restore(
    proxy: Proxy, cut_server: CutServer
) -> None:
    """The upstream stalls in the middle of the reasoning; the client reads a few chunks and
    disconnects. Nothing of the cut reply is stored: the client's next request, continuing
    with what it received (a delivery, so the reply is in the current turn), carries no
    reasoning, and the proxy answers it."""
    events = recorded_events("deepseek_thinking_stream")
    model = upstream_model(CUT)
    followup = {
        "id": "chatcmpl-next",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    cut_server.plan(model, Plan(events, cut=40, how="stall"), Plan(json_body=followup))
    first = [{"role": "user", "content": "Hello"}]
    auth = {"authorization": f"Bearer {proxy.master_key}"}
    received: list[str] = []
    with httpx.stream(
        "POST",
        proxy.base_url + "/chat/completions",
        json={"model": CUT, "messages": first, "stream": True},
        headers=auth,
        timeout=60,
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                received.append(line)
            if len(received) >= 10:
                break  # the client goes away with the reply half streamed
    reasoning = "".join(
        json.loads(line[5:])["choices"][0]["delta"].get("reasoning_content") or ""
        for line in received
        if json.loads(line[5:]).get("choices")
    )
    assert reasoning  # it did receive part of the reasoning
    time.sleep(1.0)  # what LiteLLM logs of the cut stream has landed by now
    with openai.OpenAI(
        base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
    ) as client:
        follow = [
            *first,
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "are you there?", "turn": False},
        ]
        reply = client.chat.completions.create(model=CUT, messages=follow)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "ok"
    (body,) = [b for b in cut_server.bodies(model) if not b.get("stream")]
    assert all("reasoning_content" not in m for m in body["messages"]), body
    assert reasoning[:20] not in json.dumps(body)


def test_openrouter_streams_of_two_end_users_with_one_chunk_id_never_mix(
    proxy: Proxy, cut_server: CutServer
) -> None:
    """Two end users stream OpenRouter Claude replies at once, slowly, with the same upstream
    chunk id: each next request carries exactly its own merged text and signature."""
    texts = {t: f"{t} thinks privately: {uuid.uuid4().hex}" for t in OPENROUTER_MODELS}
    for tenant, model in OPENROUTER_MODELS.items():
        events = openrouter_stream(texts[tenant], f"SIG-{tenant}", "gen-shared", f"call_{tenant}")
        followup = {
            "id": "gen-next",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "ok"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        cut_server.plan(model, Plan(events, delay=0.05), Plan(json_body=followup))
    start = threading.Barrier(len(OPENROUTER_MODELS))

    def run(tenant: str) -> Any:
        call = {"id": f"call_{tenant}", "type": "function"}
        call["function"] = {"name": "f", "arguments": "{}"}
        with openai.OpenAI(
            base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
        ) as client:
            history: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
            start.wait(timeout=60)
            for _ in client.chat.completions.create(
                model=f"or-{tenant}",
                messages=history,
                stream=True,
                user=tenant,  # type: ignore[arg-type]
            ):
                pass
            history += [
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": "ok"},
            ]
            client.chat.completions.create(model=f"or-{tenant}", messages=history, user=tenant)  # type: ignore[arg-type]
        (body,) = [b for b in cut_server.bodies(OPENROUTER_MODELS[tenant]) if not b.get("stream")]
        return body["messages"][1].get("reasoning_details")

    with ThreadPoolExecutor(len(OPENROUTER_MODELS)) as pool:
        sent = dict(zip(OPENROUTER_MODELS, pool.map(run, OPENROUTER_MODELS), strict=True))
    for tenant in OPENROUTER_MODELS:
        assert sent[tenant] == [
            {
                "type": "reasoning.text",
                "format": "anthropic-claude-v1",
                "index": 0,
                "text": texts[tenant],
                "signature": f"SIG-{tenant}",
            }
        ], (tenant, sent[tenant], proxy.log_tail())


def _continue_as_other_user(proxy: Proxy, upstream: ByContent, tag: str) -> Any:
    """Step 1 as end user `u1`, step 2 (same conversation) as `u2` with a namespace of its own
    choosing: what step 2 carried of step 1's reasoning."""
    prompt = f"Weather in Lima? ({tag})"
    mine = f"reasoning of u1 ({tag}): {uuid.uuid4().hex}"
    upstream.by_content[(prompt, 1)] = tool_reply(mine, "call_lima", "Lima")
    upstream.by_content[(prompt, 2)] = text_reply("answer", "Mild.")
    with openai.OpenAI(
        base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
    ) as client:
        history: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        first = chat(client, SHARED, history, stream=False, tools=TOOLS, user="u1")
        history += [
            first.as_history(),
            {"role": "tool", "tool_call_id": "call_lima", "content": "Mild"},
        ]
        other = {"metadata": {"reasoning_namespace": "chosen-by-the-client"}}
        chat(client, SHARED, history, stream=False, tools=TOOLS, user="u2", extra_body=other)
    (body,) = [
        b
        for b in upstream.bodies(upstream_model(SHARED))
        if upstream.conversation(b) == (prompt, 2)
    ]
    (assistant,) = assistant_messages(body)
    return mine, assistant.get("reasoning_content")


def test_client_chosen_scope_parts_separate_by_default_and_are_ignored_when_off(
    proxy: Proxy, upstream: ByContent, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """By default the end user and `metadata.reasoning_namespace` (both chosen by the client)
    separate conversations within one key: `u2` gets none of `u1`'s reasoning. With
    `scope_from_client: false` they are not scope parts: only the key and team are."""
    mine, sent = _continue_as_other_user(proxy, upstream, "default")
    assert sent is None and mine not in repr(upstream.bodies(upstream_model(SHARED))[-1])
    config = proxy_config(
        [openai_compatible_deployment(SHARED, upstream_model(SHARED), upstream.base_url)],
        callback_settings={"scope_from_client": False},
    )
    with run_proxy(
        config,
        tmp_path_factory.mktemp("proxy-noclient"),
        env={"LITELLM_REASONING_STORE": "memory://"},
    ) as off:
        mine, sent = _continue_as_other_user(off, upstream, "off")
    assert sent == mine
