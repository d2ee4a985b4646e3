"""A refused record is never sent twice: when a provider refuses reasoning the callback restored
(or asks for reasoning its policy left out), the retry goes through, by LiteLLM's own retries or
by the client sending the request again, and the refused record never reaches a provider again.

Local servers refuse like the providers, with their status codes and error bodies: Claude
(`AnthropicUpstream.revoked`: "Invalid `signature` in `thinking` block"), DeepSeek's thinking
mode with tools (`refusals.deepseek_reasoning_required`), OpenAI Responses
(`refusals.openai_encrypted_content`). Asserted on what reached the wire."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
import yaml
from clients import READ_FILE, THINKING, complete, dropping_client
from conftest import register, settled
from litellm.integrations.custom_logger import CustomLogger
from paths import REPO

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core import healing
from litellm_reasoning.core.healing import Refusal
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.gemini_upstream import GeminiReply, GeminiUpstream
from litellm_reasoning.testing.refusals import deepseek_reasoning_required, openai_encrypted_content
from litellm_reasoning.testing.upstream import Reply, Upstream

CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]
TOOL = READ_FILE
CASSETTES = REPO / "cassettes"
Json = dict[str, Any]


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


# ------------------------------------------------------------------ pure: what names what


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        (
            'litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":'
            '"invalid_request_error","message":"messages.1.content.0: Invalid `signature` in '
            '`thinking` block"}}',
            Refusal.SIGNED_BLOCKS,
        ),
        (
            "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to "
            "a different conversation. Remove the block, or set "
            '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".',
            Refusal.SIGNED_BLOCKS,
        ),
        (
            "messages.3.content.1: `thinking` or `redacted_thinking` blocks in the latest "
            "assistant message cannot be modified. These blocks must remain as they were in the "
            "original response.",
            Refusal.SIGNED_BLOCKS,
        ),
        (
            'BedrockException - {"message":"ValidationException: The model returned the '
            'following errors: messages.1.content.0.thinking.signature: Field required"}',
            Refusal.SIGNED_BLOCKS,
        ),
        ("400 Corrupted thought signature.", Refusal.THOUGHT_SIGNATURE),
        ("400 Invalid thought signature.", Refusal.THOUGHT_SIGNATURE),
        (
            "The encrypted content gAAA...DQ== could not be verified.",
            Refusal.ENCRYPTED_ITEM,
        ),
        (
            '{"code": "invalid_encrypted_content", "message": "The encrypted content for item '
            "rs_0f26 could not be verified. Reason: Encrypted content could not be decrypted or "
            'parsed."}',
            Refusal.ENCRYPTED_ITEM,
        ),
        (
            "Item with id 'rs_68a' not found. Items are not persisted when `store` is set to "
            "false. Try again with `store` set to true, or remove this item from your input.",
            Refusal.ENCRYPTED_ITEM,
        ),
        (
            "Item 'rs_68a' of type 'reasoning' was provided without its required following item.",
            Refusal.ENCRYPTED_ITEM,
        ),
        (
            "The `reasoning_content` in the thinking mode must be passed back to the API.",
            Refusal.REASONING_REQUIRED,
        ),
        (
            "thinking is enabled but reasoning_content is missing in assistant tool call message "
            "at index 2",
            Refusal.REASONING_REQUIRED,
        ),
        (
            "Missing `reasoning_content` field in the assistant message at message index 6.",
            Refusal.REASONING_REQUIRED,
        ),
        (
            "ValidationException: User messages cannot contain reasoning content",
            Refusal.REASONING_REJECTED,
        ),
        ("messages.0: max_tokens: 100000 > 64000, which is the maximum", None),
        ("Rate limit reached for requests", None),
        ("Function call is missing a thought_signature in functionCall parts.", None),
    ],
)
def test_refusals_are_named_by_the_providers_own_texts(text: str, refusal: Refusal | None) -> None:
    assert healing.classify(text) is refusal


def test_only_what_the_callback_caused_is_healed() -> None:
    signed = Reasoning(parts=(ReasoningPart(text="t", signature="sig"),), provider="anthropic")
    plain = Reasoning.from_text("plain", provider="deepseek")
    both = {"k1": signed, "k2": plain}
    healed = healing.heal(Refusal.SIGNED_BLOCKS, both, TurnPolicy.ALL_TURNS)
    assert healed is not None and healed.evict == ("k1",)
    assert healing.heal(Refusal.SIGNED_BLOCKS, {}, TurnPolicy.ALL_TURNS) is None
    assert healing.heal(Refusal.SIGNED_BLOCKS, {"k2": plain}, TurnPolicy.ALL_TURNS) is None
    moved = healing.heal(Refusal.REASONING_REQUIRED, {}, TurnPolicy.CURRENT_TURN)
    assert moved is not None and moved.policy is TurnPolicy.ALL_TURNS and moved.evict == ()
    # Already every turn: the callback left nothing out, so it did not cause the refusal.
    assert healing.heal(Refusal.REASONING_REQUIRED, {}, TurnPolicy.ALL_TURNS) is None
    assert healing.heal(Refusal.REASONING_REJECTED, {}, TurnPolicy.ALL_TURNS) is None
    assert healing.fingerprint(signed) != healing.fingerprint(plain)


# ------------------------------------------------------------------ Claude: a revoked signature

SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/revoked=="


def _claude_loop(claude: AnthropicUpstream, model: str) -> None:
    claude.script(
        model,
        AnthropicReply(
            [
                {"type": "thinking", "thinking": "I should read a.py.", "signature": SIG},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
            ]
        ),
    )
    claude.always(model, AnthropicReply([{"type": "text", "text": "a.py holds one line."}]))


async def _claude(
    how: str, model: str, claude: AnthropicUpstream, messages: list[Any], **kw: Any
) -> Any:
    return await complete(
        how,
        f"anthropic/{model}",
        claude.base_url,
        messages,
        tools=[TOOL],
        thinking=THINKING,
        max_tokens=2048,
        **kw,
    )


async def _loop_with_a_revoked_signature(
    how: str, model: str, claude: AnthropicUpstream, stream: bool
) -> list[Any]:
    """A tool loop's next request from a client that dropped the thinking block, whose
    signature Claude now refuses (a rotated key, another account)."""
    _claude_loop(claude, model)
    messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
    first = await _claude(how, model, claude, messages, stream=stream)
    messages += [
        dropping_client(first),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "one line"},
    ]
    claude.revoked.add(SIG)
    return messages


def _sent_with(bodies: list[Json], needle: str) -> int:
    return sum(needle in json.dumps(body) for body in bodies)


@pytest.mark.parametrize("retries", [0, 1], ids=["no-retries", "litellm-retries"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_signature_claude_refuses_is_never_sent_again(
    callback: ReasoningCallback, how: str, stream: bool, retries: int
) -> None:
    """The client dropped the thinking block; the callback restores it; Claude now refuses its
    signature (a rotated key, another account). That request fails (or LiteLLM's retry of it
    succeeds); the record is evicted; the client's resend goes without it (thinking off for
    that call: the tool loop has no block left) and passes; no later request carries it."""
    model = f"claude-sonnet-4-5-heal-{how}-{stream}-{retries}"
    with AnthropicUpstream(strict=True) as claude:
        messages = await _loop_with_a_revoked_signature(how, model, claude, stream)
        # LiteLLM's own retry (`num_retries` of a call) re-renders after the failure event;
        # the Router does not retry a 400 (`litellm.should_retry`): the client resends.
        retried_by_litellm = bool(retries) and not how.startswith("router.")
        if retried_by_litellm:
            answer = await _claude(how, model, claude, messages, stream=stream, retries=retries)
        else:
            with pytest.raises(litellm.BadRequestError, match="Invalid `signature`"):
                await _claude(how, model, claude, messages, stream=stream, retries=retries)
            answer = await _claude(how, model, claude, messages, stream=stream)
        assert answer.content == "a.py holds one line."
        messages += [
            {"role": "assistant", "content": answer.content},
            {"role": "user", "content": "Thanks. And b.py?"},
        ]
        await _claude(how, model, claude, messages, stream=stream)
        bodies = claude.bodies(model)
    assert _sent_with(bodies, SIG) == 1, "the refused signature reached Claude twice"
    assert claude.refusals == ["messages.1.content.0: Invalid `signature` in `thinking` block"]
    assert callback.stats["refusals_healed"] == 1
    assert callback.stats["refused_records"] == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_no_log_requests_refusal_is_healed_too(
    callback: ReasoningCallback, how: str, stream: bool
) -> None:
    """Round three: a request with LiteLLM's `no-log` (LiteLLM then calls no logging callback,
    its failure event included): Claude refuses the restored block; the client's resend goes
    without it. It reached Claude twice before (nothing healed the first refusal)."""
    model = f"claude-sonnet-4-5-nolog-{how}-{stream}"
    no_log = {"no-log": True}
    with AnthropicUpstream(strict=True) as claude:
        messages = await _loop_with_a_revoked_signature(how, model, claude, stream)
        with pytest.raises(litellm.BadRequestError, match="Invalid `signature`"):
            await _claude(how, model, claude, messages, stream=stream, **no_log)
        answer = await _claude(how, model, claude, messages, stream=stream, **no_log)
        assert answer.content == "a.py holds one line."
        bodies = claude.bodies(model)
    assert _sent_with(bodies, SIG) == 1, "the refused signature reached Claude twice"
    assert callback.stats["refusals_healed"] == 1
    assert callback.stats["refused_records"] == 1


@pytest.mark.parametrize("first", ["x", "y"], ids=["other-first", "refused-first"])
@pytest.mark.parametrize("how", ["acompletion", "router.completion"])
async def test_a_refused_record_of_a_shared_key_leaves_only_its_own_conversation(
    callback: ReasoningCallback, how: str, first: str
) -> None:
    """Two conversations reach one tool-call key (the same call id at the same place): the
    first reply captured stays under the key, marked shared, the second is kept apart by the
    store. Claude refuses y's restored signature: it is evicted and never sent again; x's
    record still goes back. `refused-first`: y's record is the one under the key, so the
    eviction must leave the mark that sends x's read to x's own copy (a sync call is captured
    on LiteLLM's thread after the caller has the reply: under load either order happens)."""
    model = f"claude-sonnet-4-5-shared-{how}-{first}"
    signatures = {name: f"EqQBCgIYAhIM-{name}-shared-key==" for name in ("x", "y")}
    system = {"role": "system", "content": "You are a coding agent."}
    order = (first, "y" if first == "x" else "x")
    with AnthropicUpstream(strict=True) as claude:
        for name in order:
            claude.script(
                model,
                AnthropicReply(
                    [
                        {
                            "type": "thinking",
                            "thinking": f"plan {name}",
                            "signature": signatures[name],
                        },
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
                    ]
                ),
            )
        claude.always(model, AnthropicReply([{"type": "text", "text": "Done."}]))
        histories: dict[str, list[Any]] = {}
        for name in order:
            history: list[Any] = [
                system,
                {"role": "user", "content": f"About {name}.py"},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "Go on."},
            ]
            history.append(
                dropping_client(await _claude(how, model, claude, list(history), stream=False))
            )
            history.append({"role": "tool", "tool_call_id": "toolu_1", "content": "ok"})
            histories[name] = history
            await settled(callback)  # this reply's record written before the next one's
        claude.revoked.add(signatures["y"])
        with pytest.raises(litellm.BadRequestError, match="Invalid `signature`"):
            await _claude(how, model, claude, list(histories["y"]), stream=False)
        assert (
            await _claude(how, model, claude, list(histories["y"]), stream=False)
        ).content == "Done."
        assert (
            await _claude(how, model, claude, list(histories["x"]), stream=False)
        ).content == "Done."
        bodies = claude.bodies(model)
    assert _sent_with(bodies, signatures["y"]) == 1, "the refused signature reached Claude twice"
    assert _sent_with(bodies[-1:], signatures["x"]) == 1  # the other conversation keeps its own
    assert callback.stats["refused_records"] == 1
    assert callback.stats["shared_key_own"] == 1


async def test_a_refused_record_leaves_the_store_with_its_copy_for_older_replicas(
    tmp_path: Any,
) -> None:
    """On a store shared with other releases, a tool-call record is also kept (marked) under
    the previous release's key for its replicas: a refusal evicts that copy too, or a replica
    still on the previous release would send the refused block again."""
    callback = register(ReasoningCallback(store=f"sqlite:///{tmp_path / 'r.db'}"))
    model = "claude-sonnet-4-5-heal-copies"
    try:
        with AnthropicUpstream(strict=True) as claude:
            messages = await _loop_with_a_revoked_signature("acompletion", model, claude, False)
            (tenant,) = callback.store.tenants()
            held = callback.store.list_records(tenant.scope)
            assert len(held) == 2  # the record and its marked copy
            with pytest.raises(litellm.BadRequestError, match="Invalid `signature`"):
                await _claude("acompletion", model, claude, messages, stream=False)
        assert callback.store.list_records(tenant.scope) == []
        assert callback.stats["refusals_healed"] == 1
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()


async def test_a_refusal_the_callback_did_not_cause_changes_nothing(
    callback: ReasoningCallback,
) -> None:
    """A client that keeps its own (now refused) block: nothing was restored, so nothing is
    evicted, and the record stays for a client that needs it."""
    model = "claude-sonnet-4-5-heal-kept"
    with AnthropicUpstream(strict=True) as claude:
        _claude_loop(claude, model)
        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        first = await _claude("acompletion", model, claude, messages, stream=False)
        kept = dropping_client(first)
        kept["thinking_blocks"] = [dict(b) for b in first.thinking_blocks]
        messages += [kept, {"role": "tool", "tool_call_id": "toolu_1", "content": "one line"}]
        claude.revoked.add(SIG)
        with pytest.raises(litellm.BadRequestError):
            await _claude("acompletion", model, claude, messages, stream=False)
        assert callback.stats["refusals_healed"] == 0
        # The record is still there: a client that dropped the block gets it restored.
        claude.revoked.clear()
        messages[1] = dropping_client(first)
        answer = await _claude("acompletion", model, claude, messages, stream=False)
        assert answer.content == "a.py holds one line."
        assert _sent_with(claude.bodies(model)[-1:], SIG) == 1
        assert callback.stats["restored"] >= 1


async def test_another_error_with_restored_reasoning_changes_nothing(
    callback: ReasoningCallback,
) -> None:
    model = "claude-sonnet-4-5-heal-other"
    with Upstream() as server:
        server.refuse.append(
            lambda body: (
                (
                    400,
                    {
                        "error": {
                            "message": "max_tokens: 100000 > 64000, which is the maximum",
                            "type": "invalid_request_error",
                        }
                    },
                )
                if any(m.get("role") == "tool" for m in body.get("messages") or [])
                else None
            )
        )
        server.script(
            model,
            _tool_step("look at a.py"),
        )
        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        first = await complete(
            "acompletion",
            f"deepseek/{model}",
            server.base_url,
            messages,
            stream=False,
            tools=[TOOL],
        )
        messages += [
            dropping_client(first),
            {"role": "tool", "tool_call_id": "call_1", "content": "one line"},
        ]
        for _ in range(2):
            with pytest.raises(litellm.BadRequestError):
                await complete(
                    "acompletion",
                    f"deepseek/{model}",
                    server.base_url,
                    messages,
                    stream=False,
                    tools=[TOOL],
                )
        bodies = server.bodies(model)
    assert callback.stats["refusals_healed"] == 0
    assert _sent_with(bodies[1:], "look at a.py") == 2  # restored both times, as without a refusal


# ------------------------------------------------------------------ "must be passed back"


def _tool_step(reasoning: str) -> Reply:
    """A DeepSeek-style reply: reasoning and one tool call (`call_1`)."""
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_content": reasoning,
        "tool_calls": [_tool_call("call_1")],
    }
    return Reply(message=message)


def _tool_call(call_id: str) -> Json:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a"}'},
    }


@pytest.mark.parametrize("keeps", [True, False], ids=["keeps", "drops"])
@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_a_server_that_asks_for_every_turn_gets_it_from_then_on(
    callback: ReasoningCallback, how: str, keeps: bool
) -> None:
    """An OpenAI-compatible server the table does not know (current-turn rule) that validates
    like DeepSeek's thinking mode with tools: the second turn strips turn 1's reasoning and is
    refused; from then on that target gets every turn's reasoning, and the resend passes."""
    model = f"acme-reasoner-{how}-{keeps}"
    with Upstream(refuse=[deepseek_reasoning_required]) as server:
        server.script(
            model,
            _tool_step("R1: read a.py first"),
            Reply(message={"role": "assistant", "content": "done", "reasoning_content": "R2"}),
        )
        server.always(
            model, Reply(message={"role": "assistant", "content": "ok", "reasoning_content": "R3"})
        )

        def back(message: Any) -> Json:
            out = dropping_client(message)
            if keeps:
                out["reasoning_content"] = message.reasoning_content
            return out

        async def call(messages: list[Any]) -> Any:
            return await complete(
                how, f"openai/{model}", server.base_url, messages, stream=False, tools=[TOOL]
            )

        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        messages.append(back(await call(messages)))
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": "one line"})
        messages.append(back(await call(messages)))
        messages.append({"role": "user", "content": "And b.py?"})
        with pytest.raises(litellm.BadRequestError, match="reasoning_content"):
            await call(messages)
        answer = await call(messages)
        assert answer.content == "ok"
        bodies = server.bodies(model)
    last = [m for m in bodies[-1]["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in last] == ["R1: read a.py first", "R2"]
    assert len(server.refusals) == 1
    assert callback.stats["refusals_healed"] == 1


# ------------------------------------------------------------------ OpenAI Responses


def _cassette(name: str) -> list[Json]:
    raw = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text(encoding="utf-8"))
    return list(raw["interactions"])


async def test_an_encrypted_item_openai_refuses_is_never_sent_again(
    callback: ReasoningCallback,
) -> None:
    """Native `aresponses`: the reasoning item the client dropped is restored; OpenAI cannot
    decrypt it (another organisation's key) and answers `invalid_encrypted_content`; the
    resend goes without it and passes."""
    first, second = _cassette("openai_responses_tool_loop")
    reply1 = json.loads(first["response"]["body"]["string"])
    (item,) = [i for i in reply1["output"] if i["type"] == "reasoning"]
    request2 = json.loads(second["request"]["body"])
    dropped = [i for i in request2["input"] if i.get("type") != "reasoning"]
    with Upstream(refuse=[openai_encrypted_content({item["encrypted_content"]})]) as server:
        server.script("gpt-5", Reply(raw_body=first["response"]["body"]["string"]))
        server.always("gpt-5", Reply(raw_body=second["response"]["body"]["string"]))
        request1 = json.loads(first["request"]["body"])
        params = {k: v for k, v in request1.items() if k not in ("model", "input", "stream")}
        await litellm.aresponses(
            model="openai/gpt-5",
            input=request1["input"],
            api_base=server.base_url,
            api_key="k",
            **params,
        )
        with pytest.raises(litellm.BadRequestError, match="could not be verified"):
            await litellm.aresponses(
                model="openai/gpt-5", input=dropped, api_base=server.base_url, api_key="k", **params
            )
        await litellm.aresponses(
            model="openai/gpt-5", input=dropped, api_base=server.base_url, api_key="k", **params
        )
        bodies = server.bodies("gpt-5")
    assert _sent_with(bodies, item["encrypted_content"]) == 1
    assert len(server.refusals) == 1
    assert callback.stats["refusals_healed"] == 1 and callback.stats["refused_records"] == 1


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_an_attempt_litellm_retries_is_rendered_like_the_first(
    callback: ReasoningCallback, how: str
) -> None:
    """LiteLLM's own retry (`num_retries`) builds the body again from the caller's messages and
    never runs the deployment hook again: the retried attempt still carries the restored
    reasoning, and `turn` still never reaches the provider."""
    model = f"deepseek-reasoner-retried-{how}"
    with Upstream() as server:
        server.script(
            model,
            _tool_step("R1: read a.py"),
            Reply(raw_body='{"error": {"message": "Service overloaded"}}', status=503),
        )
        server.always(model, Reply(message={"role": "assistant", "content": "done"}))
        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        first = await complete(
            how, f"deepseek/{model}", server.base_url, messages, stream=False, tools=[TOOL]
        )
        messages += [
            dropping_client(first),
            {"role": "tool", "tool_call_id": "call_1", "content": "one line"},
            {"role": "user", "content": "(a note from the harness)", "turn": False},
        ]
        answer = await complete(
            how,
            f"deepseek/{model}",
            server.base_url,
            messages,
            stream=False,
            tools=[TOOL],
            retries=1,
        )
        assert answer.content == "done"
        attempts = server.bodies(model)[1:]
    assert len(attempts) == 2
    for body in attempts:
        (assistant,) = [m for m in body["messages"] if m["role"] == "assistant"]
        assert assistant.get("reasoning_content") == "R1: read a.py"
        assert not any("turn" in m for m in body["messages"])
    assert callback.stats["refusals_healed"] == 0


class _Failures(CustomLogger):
    """Keeps the logging metadata of each failed call (the dict itself: read at the end)."""

    def __init__(self) -> None:
        super().__init__()
        self.instance_id = uuid.uuid4().hex  # LiteLLM keeps one instance per class and fields
        self.metadata: list[dict[str, Any]] = []

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.metadata.append(kwargs["litellm_params"]["metadata"])


async def test_a_healed_refusal_is_counted_and_summarised() -> None:
    prometheus = pytest.importorskip("prometheus_client")
    labels = {"dialect": "anthropic", "kind": "signed_blocks"}
    before = prometheus.REGISTRY.get_sample_value("litellm_reasoning_refusals_total", labels) or 0
    callback, failures = ReasoningCallback(capture_wait_seconds=10.0), _Failures()
    register(callback)
    litellm.callbacks = [callback, failures]
    model = "claude-sonnet-4-5-heal-counted"
    try:
        with AnthropicUpstream(strict=True) as claude:
            _claude_loop(claude, model)
            messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
            first = await _claude("acompletion", model, claude, messages, stream=False)
            messages += [
                dropping_client(first),
                {"role": "tool", "tool_call_id": "toolu_1", "content": "one line"},
            ]
            claude.revoked.add(SIG)
            with pytest.raises(litellm.BadRequestError):
                await _claude("acompletion", model, claude, messages, stream=False)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
        litellm.callbacks = []
    after = prometheus.REGISTRY.get_sample_value("litellm_reasoning_refusals_total", labels)
    assert after == before + 1
    (metadata,) = failures.metadata
    summary = metadata["spend_logs_metadata"]["litellm_reasoning"]
    assert summary["refused"] == {"kind": "signed_blocks", "evicted": 1}
    assert summary["counts"]["restored"] == 1


# ------------------------------------------------------------------ Gemini

GEMINI3 = "gemini-3-pro-preview"
GEMINI_SIG = "EpwICpkIAXLI2nxlU6gsWZaZHRYkX1orzuM8vSUFwaAt1JRxEC2hJzPAcAu3PWaKz7X+PIyTTqF+ZIQP"


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_a_thought_signature_gemini_refuses_is_never_sent_again(
    callback: ReasoningCallback, how: str
) -> None:
    """Gemini 3 refuses a restored thought signature ("Corrupted thought signature.", another
    project's); the record is evicted. Before LiteLLM 1.110 the call fails and the resend's first
    call gets the documented dummy signature; from 1.110 LiteLLM retries with its placeholder
    itself and the callback learns of the refusal from that retry. Either way the refused
    signature reaches Gemini once."""
    with GeminiUpstream() as gemini:
        call = {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": GEMINI_SIG}
        gemini.script(
            GEMINI3, GeminiReply(parts=[{"text": "Country first.", "thought": True}, call])
        )
        gemini.always(GEMINI3, GeminiReply(parts=[{"text": "Mexico City"}]))
        messages: list[Any] = [{"role": "user", "content": "What is the capital? Use the tool."}]
        first = await complete(how, f"gemini/{GEMINI3}", gemini.base_url, messages, stream=False)
        sent = dropping_client(first)
        for tool_call in sent["tool_calls"]:  # a client that cuts LiteLLM's signature suffix
            tool_call["id"] = tool_call["id"].split("__thought__")[0]
        messages += [
            sent,
            {"role": "tool", "tool_call_id": sent["tool_calls"][0]["id"], "content": "Mexico"},
        ]
        gemini.revoked.add(base64.b64decode(GEMINI_SIG))
        try:  # LiteLLM 1.110+ retries this refusal itself, with its placeholder signature
            answer = await complete(
                how, f"gemini/{GEMINI3}", gemini.base_url, messages, stream=False
            )
        except litellm.BadRequestError as exc:
            assert "Corrupted thought signature" in str(exc)
            answer = await complete(
                how, f"gemini/{GEMINI3}", gemini.base_url, messages, stream=False
            )
            assert callback.stats["dummy_signatures"] >= 1  # the documented dummy instead
        # The same step sent again (a client retry): the refused signature stays out.
        await complete(how, f"gemini/{GEMINI3}", gemini.base_url, messages, stream=False)
        bodies = gemini.requests_for(GEMINI3)
    assert answer.content == "Mexico City"
    carrying = [
        body
        for body in bodies
        if any(
            base64.b64decode(
                p.get("thoughtSignature", "").replace("-", "+").replace("_", "/") + "=="
            )
            == base64.b64decode(GEMINI_SIG)
            for c in body["contents"]
            for p in c["parts"]
            if p.get("thoughtSignature")
        )
    ]
    assert len(carrying) == 1, "the refused signature reached Gemini twice"
    assert gemini.refusals == ["Corrupted thought signature."]
    assert callback.stats["refusals_healed"] == 1


async def test_a_router_retry_policy_that_retries_a_400_heals_in_its_retry(
    callback: ReasoningCallback,
) -> None:
    """A Router told to retry 400s (`retry_policy`): its second attempt goes without the
    refused block and passes, inside one call."""
    model = "claude-sonnet-4-5-heal-retry-policy"
    with AnthropicUpstream(strict=True) as claude:
        _claude_loop(claude, model)
        router = litellm.Router(
            model_list=[
                {
                    "model_name": "group",
                    "litellm_params": {
                        "model": f"anthropic/{model}",
                        "api_base": claude.base_url,
                        "api_key": "k",
                    },
                }
            ],
            retry_policy=litellm.router.RetryPolicy(BadRequestErrorRetries=1),
        )
        params = {"tools": [TOOL], "thinking": THINKING, "max_tokens": 2048}
        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        first = (await router.acompletion(model="group", messages=messages, **params)).choices[0]
        messages += [
            dropping_client(first.message),
            {"role": "tool", "tool_call_id": "toolu_1", "content": "one line"},
        ]
        claude.revoked.add(SIG)
        answer = await router.acompletion(model="group", messages=messages, **params)
        bodies = claude.bodies(model)
    assert answer.choices[0].message.content == "a.py holds one line."
    assert _sent_with(bodies, SIG) == 1
    assert len(claude.refusals) == 1


# ------------------------------------------------------------------ only a provider heals


async def test_a_refusal_litellm_raises_itself_heals_nothing_for_anyone(
    callback: ReasoningCallback,
) -> None:
    """LiteLLM rejects a malformed `tool_choice` before any provider sees the request and
    echoes it: a client can write a refusal's text there ("cannot contain reasoning
    content"). It never reached a provider, so nothing is healed: the other tenant's Kimi tool
    loop keeps its reasoning (before 0.3.0: `none` for everyone, and Kimi's 400)."""
    from litellm_reasoning.testing.refusals import kimi_reasoning_required

    model = "kimi-k2-thinking"
    with Upstream(refuse=[kimi_reasoning_required]) as kimi:
        kimi.always(model, _tool_step("R: read a.py"))

        async def step(user: str, messages: list[Any], **extra: Any) -> Any:
            return await complete(
                "acompletion",
                f"openai/{model}",
                kimi.base_url,
                messages,
                stream=False,
                tools=[TOOL],
                user=user,
                **extra,
            )

        loops: dict[str, list[Any]] = {}
        for user in ("victim", "attacker"):
            loops[user] = [{"role": "user", "content": f"What is in a.py? ({user})"}]
            loops[user].append(dropping_client(await step(user, loops[user])))
            loops[user].append({"role": "tool", "tool_call_id": "call_1", "content": "x"})
        forged = {"type": "cannot contain reasoning content must be passed back"}
        for _ in range(3):
            with pytest.raises(litellm.BadRequestError, match="Invalid tool choice"):
                await step("attacker", loops["attacker"], tool_choice=forged)
        await step("victim", loops["victim"])
        victim = kimi.bodies(model)[-1]["messages"]
    assert victim[1]["reasoning_content"] == "R: read a.py"
    assert kimi.refusals == []
    assert callback.stats["refusals_healed"] == 0


async def test_a_learned_policy_is_the_tenants_own_and_never_widens_the_operators() -> None:
    """A provider's real "must be passed back" refusal in one tenant's request moves only that
    tenant's requests to every turn; an operator's explicit `current_turn` is never widened."""
    model = "acme-scoped-reasoner"

    async def call(server: Upstream, user: str, messages: list[Any]) -> Any:
        return await complete(
            "acompletion",
            f"openai/{model}",
            server.base_url,
            messages,
            stream=False,
            tools=[TOOL],
            user=user,
        )

    async def new_turn(server: Upstream, user: str) -> list[Any]:
        messages: list[Any] = [{"role": "user", "content": f"What is in a.py? ({user})"}]
        messages.append(dropping_client(await call(server, user, messages)))
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": "one line"})
        messages.append(dropping_client(await call(server, user, messages)))
        messages.append({"role": "user", "content": "And b.py?"})
        with pytest.raises(litellm.BadRequestError, match="reasoning_content"):
            await call(server, user, messages)  # turn 1's reasoning stripped: refused, learned
        return messages

    def script(server: Upstream) -> None:
        server.always(model, _tool_step("R: read a.py"))

    scoped = register(ReasoningCallback())
    try:
        with Upstream(refuse=[deepseek_reasoning_required]) as server:
            script(server)
            await new_turn(server, "tenant-b")
            assert scoped.stats["refusals_healed"] == 1
            # tenant A has learned nothing from B: its own first refusal happens too
            await new_turn(server, "tenant-a")
            assert scoped.stats["refusals_healed"] == 2
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()

    explicit = register(ReasoningCallback(policies={f"openai/{model}": "current_turn"}))
    try:
        with Upstream(refuse=[deepseek_reasoning_required]) as server:
            script(server)
            messages = await new_turn(server, "tenant-b")
            with pytest.raises(litellm.BadRequestError, match="reasoning_content"):
                # the operator's current_turn holds: earlier turns still stripped
                await call(server, "tenant-b", messages)
            sent = server.bodies(model)[-1]["messages"]
        assert [m.get("reasoning_content") for m in sent if m["role"] == "assistant"] == [
            None,
            None,
        ]
        assert explicit.stats["refusals_healed"] == 0
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()


def test_learned_policies_are_bounded_and_expire() -> None:
    from litellm_reasoning.memo.learned import LearnedPolicies

    now = [0.0]
    learned = LearnedPolicies(max_entries=2, ttl_seconds=10, clock=lambda: now[0])
    for scope in ("a", "b", "c"):
        learned.put((scope, "p", "m", "d"), TurnPolicy.ALL_TURNS)
    assert len(learned) == 2 and learned.get(("a", "p", "m", "d")) is None
    assert learned.get(("c", "p", "m", "d")) is TurnPolicy.ALL_TURNS
    now[0] = 11
    assert learned.get(("c", "p", "m", "d")) is None
