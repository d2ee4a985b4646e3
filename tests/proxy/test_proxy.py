"""End to end through the real LiteLLM proxy: official `openai` client → proxy (with
`litellm_settings: callbacks: litellm_reasoning.callback`) → local OpenAI-compatible upstream.

Every assertion about what the callback did is made on the request bodies the upstream received
(what reached the wire). Each scenario has its own model group and upstream model name, so the
scripted replies of one scenario never answer another's requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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
    tool_call,
    tool_loop,
    tool_reply,
    upstream_model,
    wire_ids,
)

from litellm_reasoning.testing.upstream import Upstream

pytestmark = pytest.mark.proxy

SCENARIOS = (
    "loop-plain",
    "loop-stream",
    "newturn-plain",
    "newturn-stream",
    "kept-earlier",
    "delivery",
    "delivery-contrast",
    "isolation",
    "echo-plain",
    "echo-stream",
)
"""Model groups; group `g` is `openai/g-upstream` on the local upstream."""

# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as up:
        yield up


@pytest.fixture(scope="module")
def proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    config = proxy_config(
        openai_compatible_deployment(group, upstream_model(group), upstream.base_url)
        for group in SCENARIOS
    )
    settings = {"LITELLM_REASONING_STORE": "memory://"}
    with run_proxy(config, tmp_path_factory.mktemp("proxy"), env=settings) as running:
        print(f"\nlitellm proxy live after {running.startup_seconds:.1f} s")
        yield running


@pytest.fixture(scope="module")
def client(proxy: Proxy) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
    ) as c:
        yield c


@pytest.fixture
def log_on_failure(proxy: Proxy) -> Iterator[None]:
    """Print what the proxy logged during the test; pytest shows it only when the test fails."""
    start = proxy.log_path.stat().st_size
    yield
    with proxy.log_path.open("rb") as log:
        log.seek(start)
        text = log.read().decode(errors="replace")
    print("---- proxy log during this test (last 120 lines) ----")
    print("\n".join(text.splitlines()[-120:]))


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_tool_loop_restores_reasoning(
    client: openai.OpenAI, upstream: Upstream, stream: bool, log_on_failure: None
) -> None:
    group = "loop-stream" if stream else "loop-plain"
    model = upstream_model(group)
    reasoning = f"R1 ({group}): the user wants Paris weather, call get_weather."
    history = tool_loop(
        client, upstream, group, stream=stream, reasoning=reasoning, call_id=f"call_{group}_1"
    )
    assert "reasoning_content" not in history[2]

    # Request 2, sent right after request 1 (for a stream: right after its last chunk).
    upstream.script(model, text_reply("R2: summarise.", "It is sunny in Paris."))
    got = chat(client, group, history, stream=stream, tools=TOOLS, user="alice")
    assert got.content == "It is sunny in Paris."

    bodies = upstream.bodies(model)
    assert len(bodies) == 2, bodies
    wire = bodies[1]
    assert bool(wire.get("stream")) is stream
    (assistant,) = assistant_messages(wire)
    assert wire_ids(assistant) == [f"call_{group}_1"]
    assert assistant.get("reasoning_content") == reasoning, (
        f"reasoning was not restored on the wire; assistant message sent: {assistant}"
    )
    assert_no_turn_key(wire)
    # Request 1 had no assistant message, so nothing was added to it.
    assert [m["role"] for m in bodies[0]["messages"]] == ["system", "user"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_new_turn_sends_no_earlier_reasoning(
    client: openai.OpenAI, upstream: Upstream, stream: bool, log_on_failure: None
) -> None:
    group = "newturn-stream" if stream else "newturn-plain"
    model = upstream_model(group)
    r1 = f"R1 ({group}): call get_weather for Paris."
    history = tool_loop(
        client, upstream, group, stream=stream, reasoning=r1, call_id=f"call_{group}_1"
    )
    upstream.script(model, text_reply(f"R2 ({group}): answer.", "Sunny in Paris."))
    final = chat(client, group, history, stream=stream, tools=TOOLS, user="alice")
    assert final.reasoning_content == f"R2 ({group}): answer."

    # Turn 2: a new user message; the model calls a tool again.
    r3 = f"R3 ({group}): now Rome."
    history += [final.as_history(), {"role": "user", "content": "And in Rome?"}]
    upstream.script(model, tool_reply(r3, f"call_{group}_2", "Rome"))
    second = chat(client, group, history, stream=stream, tools=TOOLS, user="alice")
    assert second.reasoning_content == r3
    history += [
        second.as_history(),
        {"role": "tool", "tool_call_id": f"call_{group}_2", "content": "Rainy, 17 C"},
    ]
    upstream.script(model, text_reply(f"R4 ({group}): answer.", "Rainy in Rome."))
    chat(client, group, history, stream=stream, tools=TOOLS, user="alice")

    bodies = upstream.bodies(model)
    assert len(bodies) == 4
    # Request 3 starts turn 2: both turn-1 assistant messages go without reasoning.
    turn_one = assistant_messages(bodies[2])
    assert len(turn_one) == 2
    for message in turn_one:
        assert "reasoning_content" not in message, f"earlier turn carried reasoning: {message}"
    # Request 4: turn 1 still without, turn 2's tool-call message restored.
    earlier_a, earlier_b, current = assistant_messages(bodies[3])
    assert "reasoning_content" not in earlier_a, earlier_a
    assert "reasoning_content" not in earlier_b, earlier_b
    assert wire_ids(current) == [f"call_{group}_2"]
    assert current.get("reasoning_content") == r3, current
    for body in bodies:
        assert_no_turn_key(body)


def test_reasoning_kept_by_client_is_stripped_from_earlier_turns(
    client: openai.OpenAI, upstream: Upstream, log_on_failure: None
) -> None:
    """A client that does send `reasoning_content` back: earlier turns lose it on the wire,
    the current turn keeps what the client sent."""
    group = "kept-earlier"
    model = upstream_model(group)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "OLD-1",
            "tool_calls": [tool_call("call_kept_1", "Paris")],
        },
        {"role": "tool", "tool_call_id": "call_kept_1", "content": "Sunny"},
        {"role": "assistant", "content": "Sunny.", "reasoning_content": "OLD-2"},
        {"role": "user", "content": "And Rome?"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "CUR-1",
            "tool_calls": [tool_call("call_kept_2", "Rome")],
        },
        {"role": "tool", "tool_call_id": "call_kept_2", "content": "Rainy"},
    ]
    upstream.script(model, text_reply("R", "Rainy in Rome."))
    chat(client, group, history, stream=False, tools=TOOLS, user="alice")
    (wire,) = upstream.bodies(model)
    old_1, old_2, current = assistant_messages(wire)
    assert "reasoning_content" not in old_1, old_1
    assert "reasoning_content" not in old_2, old_2
    assert current.get("reasoning_content") == "CUR-1", current


def test_turn_false_delivery_keeps_the_turn(
    client: openai.OpenAI, upstream: Upstream, log_on_failure: None
) -> None:
    """A `turn: false` user message mid-turn does not start a turn: the assistant message before
    it still gets its reasoning back, and `turn` never reaches the upstream."""
    group = "delivery"
    model = upstream_model(group)
    reasoning = "R1 (delivery): call get_weather."
    history = tool_loop(
        client, upstream, group, stream=False, reasoning=reasoning, call_id="call_delivery_1"
    )
    history.append({"role": "user", "content": "[note] also check the UV index", "turn": False})
    upstream.script(model, text_reply("R2", "Sunny, UV 6."))
    chat(client, group, history, stream=False, tools=TOOLS, user="alice")

    bodies = upstream.bodies(model)
    assert len(bodies) == 2
    wire = bodies[1]
    assert_no_turn_key(wire)
    assert wire["messages"][-1] == {"role": "user", "content": "[note] also check the UV index"}
    (assistant,) = assistant_messages(wire)
    assert assistant.get("reasoning_content") == reasoning, assistant


def test_user_message_without_turn_false_starts_a_turn(
    client: openai.OpenAI, upstream: Upstream, log_on_failure: None
) -> None:
    """The contrast to the delivery test: the same history with a plain user message is a new
    turn, so the earlier assistant message goes without reasoning."""
    group = "delivery-contrast"
    model = upstream_model(group)
    history = tool_loop(
        client, upstream, group, stream=False, reasoning="R1 (contrast)", call_id="call_contrast_1"
    )
    history.append({"role": "user", "content": "[note] also check the UV index"})
    upstream.script(model, text_reply("R2", "Sunny, UV 6."))
    chat(client, group, history, stream=False, tools=TOOLS, user="alice")
    wire = upstream.bodies(model)[1]
    (assistant,) = assistant_messages(wire)
    assert "reasoning_content" not in assistant, assistant


def test_other_end_user_gets_nothing_restored(
    client: openai.OpenAI, upstream: Upstream, log_on_failure: None
) -> None:
    group = "isolation"
    model = upstream_model(group)
    reasoning = "R1 (alice's private reasoning)"
    history = tool_loop(
        client,
        upstream,
        group,
        stream=False,
        reasoning=reasoning,
        call_id="call_isolation_1",
        user="alice",
    )

    # Bob replays alice's exact history (same master key, different end user).
    upstream.script(model, text_reply("Rb", "for bob"))
    chat(client, group, history, stream=False, tools=TOOLS, user="bob")
    # Alice continues: her reasoning is restored (the negative above is not vacuous).
    upstream.script(model, text_reply("Ra", "for alice"))
    chat(client, group, history, stream=False, tools=TOOLS, user="alice")

    bodies = upstream.bodies(model)
    assert len(bodies) == 3
    bob_body, alice_body = bodies[1], bodies[2]
    (bob_assistant,) = assistant_messages(bob_body)
    assert "reasoning_content" not in bob_assistant, (
        f"another end user got alice's reasoning: {bob_assistant}"
    )
    (alice_assistant,) = assistant_messages(alice_body)
    assert alice_assistant.get("reasoning_content") == reasoning, alice_assistant


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_client_receives_upstream_reply_unchanged(
    client: openai.OpenAI, upstream: Upstream, stream: bool, log_on_failure: None
) -> None:
    group = "echo-stream" if stream else "echo-plain"
    model = upstream_model(group)
    upstream.script(model, text_reply(f"Because ({group}) 6 x 7 = 42.", "42"))
    got = chat(client, group, [{"role": "user", "content": "6 x 7?"}], stream=stream, user="alice")
    assert got.content == "42"
    assert got.reasoning_content == f"Because ({group}) 6 x 7 = 42."
    assert got.tool_calls == []
    assert len(upstream.bodies(model)) == 1
