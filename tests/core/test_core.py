"""The pure core: turn rule, reading reasoning, message identity, rendering, targets, store."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from paths import REPO

from litellm_reasoning.core import identity
from litellm_reasoning.core.extract import reasoning_from_message
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import plan, render
from litellm_reasoning.core.targets import resolve_target
from litellm_reasoning.core.turns import current_turn_start, starts_turn
from litellm_reasoning.stores import MemoryStore, store_from_url
from litellm_reasoning.wire import get_dialect

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

SEED = REPO.parent / "shared" / "seeds" / "reasoning-cases.json"
REPO_SEED = REPO / "conformance" / "seed-reasoning.json"


def _as_client(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if k != "reasoning"}
        out.append(m)
    return out


class TestTurnRule:
    def test_turn_false_starts_no_turn(self) -> None:
        """Only the boolean false marks a delivery."""
        assert not starts_turn({"role": "user", "content": "x", "turn": False})
        assert starts_turn({"role": "user", "content": "x"})
        assert starts_turn({"role": "user", "content": "x", "turn": True})
        assert starts_turn({"role": "user", "content": "x", "turn": "false"})
        assert starts_turn({"role": "user", "content": "x", "turn": 0})
        assert not starts_turn({"role": "assistant", "content": "x"})
        assert not starts_turn("not a message")

    def test_anthropic_format_tool_results_start_no_turn(self) -> None:
        """The one rule for every format: a user message holding `tool_result` blocks answers
        the tool loop (Claude Code appends a system reminder beside them: still no turn)."""
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
        reminder = {"type": "text", "text": "<system-reminder>...</system-reminder>"}
        assert not starts_turn({"role": "user", "content": [result]})
        assert not starts_turn({"role": "user", "content": [result, reminder]})
        assert starts_turn({"role": "user", "content": [reminder]})
        assert not starts_turn({"role": "user", "content": [reminder], "turn": False})
        msgs = [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1"}]},
            {"role": "user", "content": [result, reminder]},
        ]
        assert current_turn_start(msgs) == 0

    def test_current_turn_start(self) -> None:
        msgs = [
            {"role": "user"},
            {"role": "assistant"},
            {"role": "user", "turn": False},
            {"role": "assistant"},
        ]
        assert current_turn_start(msgs) == 0
        assert current_turn_start([*msgs, {"role": "user"}]) == 4
        assert current_turn_start([{"role": "assistant"}]) == -1

    def test_current_turn_start_among_the_user_messages(self) -> None:
        """Asked only where user messages stand (a walk's list, or several): the same start."""
        msgs = [
            {"role": "user"},
            {"role": "assistant"},
            {"role": "user", "turn": False},
            {"role": "tool"},
            {"role": "user"},
            {"role": "assistant"},
            {"role": "user", "turn": False},
        ]
        assert current_turn_start(msgs, ([0, 2, 4, 6],)) == 4 == current_turn_start(msgs)
        assert current_turn_start(msgs, ([0, 2], [4, 6])) == 4
        assert current_turn_start(msgs, ([4], [0, 2, 6])) == 4
        assert current_turn_start(msgs[:4], ([0, 2],)) == 0
        assert current_turn_start(msgs[1:4], ([1],)) == -1
        assert current_turn_start(msgs, ()) == -1  # no user message: none starts a turn


class TestSeedCasesRenderedPurely:
    """The seed's cases through the pure renderer, with reasoning restored from a store lookup."""

    @pytest.mark.parametrize("source", [REPO_SEED])
    def test_seed_file_is_the_shared_seed(self, source: Path) -> None:
        """The repository's copy of the seed cases is the seed itself, unchanged."""
        if SEED.exists():
            assert json.loads(source.read_text()) == json.loads(SEED.read_text())
        assert json.loads(source.read_text())["cases"]

    @pytest.mark.parametrize("index", range(6))
    def test_seed_case(self, index: int) -> None:
        case = json.loads(REPO_SEED.read_text())["cases"][index]
        messages = case["messages"]
        client = _as_client(messages)
        dialect = get_dialect("openai_chat")
        stored = {
            i: Reasoning.from_text(m["reasoning"])
            for i, m in enumerate(messages)
            if m.get("reasoning")
        }
        wanted = plan(client, dialect, TurnPolicy.CURRENT_TURN)
        rendered = render(
            client, dialect, TurnPolicy.CURRENT_TURN, {i: stored[i] for i in wanted if i in stored}
        )
        assert rendered.messages == case["expect"]


class TestRender:
    def test_caller_messages_are_not_mutated(self) -> None:
        msgs = [
            {"role": "user", "content": "a", "turn": True},
            {
                "role": "assistant",
                "content": "b",
                "reasoning_content": "r",
                "provider_specific_fields": {"x": 1},
            },
            {"role": "user", "content": "c"},
        ]
        before = copy.deepcopy(msgs)
        out = render(msgs, get_dialect("openai_chat"), TurnPolicy.CURRENT_TURN)
        assert msgs == before
        assert out.messages == [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ]
        assert out.stripped == [1]

    def test_no_reasoning_dialect_strips_every_field(self) -> None:
        msg = {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "text", "text": "hi"},
            ],
            "reasoning_content": "t",
            "reasoning": "t",
            "thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": "s"}],
            "reasoning_items": [{"type": "reasoning", "id": "rs_1"}],
            "reasoning_details": [{"type": "reasoning.text", "text": "t"}],
            "provider_specific_fields": {"thought_signatures": ["g"]},
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                    "provider_specific_fields": {"thought_signature": "g"},
                }
            ],
        }
        out = render(
            [{"role": "user", "content": "q"}, msg],
            get_dialect("no_reasoning"),
            TurnPolicy.CURRENT_TURN,
        )
        assert out.messages[1] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }

    def test_passthrough_leaves_assistant_messages_alone(self) -> None:
        msg = {
            "role": "assistant",
            "content": "x",
            "thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": "s"}],
        }
        out = render(
            [{"role": "user", "content": "q", "turn": False}, msg],
            get_dialect("passthrough"),
            TurnPolicy.CURRENT_TURN,
        )
        assert out.messages == [{"role": "user", "content": "q"}, msg]

    def test_empty_reasoning_carries_no_field(self) -> None:
        out = render(
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", "reasoning_content": ""},
            ],
            get_dialect("openai_chat"),
            TurnPolicy.CURRENT_TURN,
        )
        assert out.messages[1] == {"role": "assistant", "content": "a"}

    def test_non_dict_messages_pass_unchanged(self) -> None:
        out = render(
            ["odd", None, {"role": "user", "content": "q"}],
            get_dialect("openai_chat"),
            TurnPolicy.CURRENT_TURN,
        )
        assert out.messages == ["odd", None, {"role": "user", "content": "q"}]


class TestExtract:
    def test_thinking_blocks_win_over_text(self) -> None:
        msg = {
            "reasoning_content": "ab",
            "thinking_blocks": [
                {"type": "thinking", "thinking": "a", "signature": "S1"},
                {"type": "redacted_thinking", "data": "R"},
                {"type": "thinking", "thinking": "b", "signature": "S2"},
            ],
        }
        r = reasoning_from_message(msg)
        assert r is not None
        assert [p.kind for p in r.parts] == ["thinking", "redacted", "thinking"]
        assert [p.signature for p in r.parts] == ["S1", None, "S2"]
        assert r.text == "ab"

    @pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "thinking"])
    def test_text_fields(self, field: str) -> None:
        r = reasoning_from_message({field: "why"})
        assert r is not None and r.text == "why"

    def test_nothing(self) -> None:
        assert (
            reasoning_from_message({"role": "assistant", "content": "x", "reasoning_content": None})
            is None
        )

    def test_record_round_trips_through_json(self) -> None:
        r = Reasoning(
            parts=(
                ReasoningPart(text="a", signature="s"),
                ReasoningPart(kind="redacted", data="d"),
            ),
            provider="anthropic",
            model="claude",
        )
        assert Reasoning.from_json(json.loads(json.dumps(r.to_json()))) == r


class TestIdentity:
    def test_reasoning_fields_and_turn_do_not_change_identity(self) -> None:
        a = {"role": "assistant", "content": "x", "reasoning_content": "r", "tool_calls": None}
        b = {"role": "assistant", "content": "x"}
        assert identity.canonical(a) == identity.canonical(b)
        assert identity.canonical(
            {"role": "user", "content": "q", "turn": False}
        ) == identity.canonical({"role": "user", "content": "q"})

    def test_string_and_text_parts_are_the_same_content(self) -> None:
        assert identity.canonical({"role": "user", "content": "ab"}) == identity.canonical(
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            }
        )
        assert identity.canonical({"role": "assistant", "content": None}) == identity.canonical(
            {"role": "assistant", "content": ""}
        )

    def test_scope_separates_keys(self) -> None:
        msg = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "function": {"name": "f"}}],
        }
        d = identity.conversation_digest([msg])
        assert identity.message_key("ns=a", msg, d) != identity.message_key("ns=b", msg, d)

    def test_positional_key_depends_on_history(self) -> None:
        reply = {"role": "assistant", "content": "Done."}
        one = [{"role": "user", "content": "one"}, reply]
        two = [{"role": "user", "content": "two"}, reply]
        k1 = identity.message_key("s", reply, identity.prefix_digests(one)[1])
        k2 = identity.message_key("s", reply, identity.prefix_digests(two)[1])
        assert k1 != k2

    def test_tool_call_key_survives_edits_of_earlier_turns(self) -> None:
        reply = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_x9", "function": {"name": "f"}}],
        }
        system = {"role": "system", "content": "sys"}
        earlier = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        edited = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b, shorter"}]
        one = [system, *earlier, {"role": "user", "content": "q"}, reply]
        two = [system, *edited, {"role": "user", "content": "q"}, reply]
        assert identity.key_at("s", one, 4) == identity.key_at("s", two, 4)

    def test_tool_call_key_depends_on_the_system_prompt(self) -> None:
        """Round three: one key, the same user message and Kimi's ids under two customers'
        system prompts are two conversations."""
        reply = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "functions.f:0", "function": {"name": "f"}}],
        }
        one = [{"role": "system", "content": "customer A"}, {"role": "user", "content": "q"}, reply]
        two = [{"role": "system", "content": "customer B"}, {"role": "user", "content": "q"}, reply]
        none = [{"role": "user", "content": "q"}, reply]
        assert len({identity.key_at("s", one, 2), identity.key_at("s", two, 2)}) == 2
        assert identity.key_at("s", none, 1) not in {
            identity.key_at("s", one, 2),
            identity.key_at("s", two, 2),
        }

    def test_extend_matches_prefix_digests(self) -> None:
        msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
        assert (
            identity.extend_digest(identity.conversation_digest(msgs[:1]), msgs[1])
            == identity.prefix_digests(msgs)[1]
        )


class TestTargets:
    @pytest.mark.parametrize(
        ("provider", "model", "api_base", "dialect"),
        [
            ("openai", "gpt-5", None, "no_reasoning"),
            ("openai", "gpt-4o", "https://api.openai.com/v1", "no_reasoning"),
            ("openai", "o3", "http://gateway.internal/v1", "no_reasoning"),
            ("openai", "qwen3-32b", "http://127.0.0.1:8000/v1", "openai_chat"),
            ("openai", "gpt-oss-120b", "http://127.0.0.1:8000/v1", "openai_chat"),
            # OpenAI's host however written; a look-alike host is another server
            ("openai", "deepseek-v4", "", "no_reasoning"),
            ("openai", "deepseek-v4", "https://API.OPENAI.COM", "no_reasoning"),
            ("openai", "deepseek-v4", "http://api.openai.com:443/v1", "no_reasoning"),
            ("openai", "deepseek-v4", "https://user@api.openai.com/v1", "no_reasoning"),
            ("openai", "deepseek-v4", "https://api.openai.com?x=1", "no_reasoning"),
            ("openai", "deepseek-v4", "https://api.openai.com.example/v1", "openai_chat"),
            ("openai", "llama-4", "api.openai.com/v1", "openai_chat"),
            # an official model name is OpenAI's behind any gateway, also under a path
            ("openai", "team/GPT-5", "http://gateway.internal/v1", "no_reasoning"),
            ("openai", "gpt-5/finetune", "http://gateway.internal/v1", "openai_chat"),
            ("openai", "codex-mini", "http://gateway.internal/v1", "no_reasoning"),
            ("openai", "responses/gpt-5", None, "openai_responses"),
            ("openai", "responses/gpt-5", "https://api.openai.com/v1", "openai_responses"),
            ("custom_openai", "gpt-5", "http://127.0.0.1:8000/v1", "openai_chat"),
            ("openai_like", "llama-4", None, "openai_chat"),
            ("deepseek", "deepseek-reasoner", None, "openai_chat"),
            ("moonshot", "kimi-k2-thinking", None, "openai_chat"),
            ("hosted_vllm", "Qwen/Qwen3-8B", "http://127.0.0.1:8000/v1", "openai_chat_reasoning"),
            ("groq", "qwen/qwen3-32b", None, "no_reasoning"),
            ("anthropic", "claude-sonnet-4-5", None, "anthropic"),
            ("bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", None, "anthropic_bedrock"),
            ("bedrock", "amazon.nova-pro-v1:0", None, "no_reasoning"),
            ("vertex_ai", "claude-sonnet-4-5@20250929", None, "anthropic_vertex"),
            ("vertex_ai", "gemini-2.5-pro", None, "gemini_vertex"),
            ("vertex_ai", "text-bison", None, "passthrough"),
        ],
    )
    def test_default_dialects(
        self, provider: str, model: str, api_base: str | None, dialect: str
    ) -> None:
        assert (
            resolve_target(provider, model, api_base, dialect_of=get_dialect).dialect.name
            == dialect
        )

    def test_deepseek_with_tools_keeps_all_turns(self) -> None:
        assert (
            resolve_target(
                "deepseek", "deepseek-chat", None, has_tools=True, dialect_of=get_dialect
            ).policy
            is TurnPolicy.ALL_TURNS
        )
        assert (
            resolve_target("deepseek", "deepseek-chat", None, dialect_of=get_dialect).policy
            is TurnPolicy.CURRENT_TURN
        )


class TestMemoryStore:
    def test_ttl_and_lru(self) -> None:
        now = [0.0]
        store = MemoryStore(max_records=2, ttl_seconds=10, clock=lambda: now[0])
        r = Reasoning.from_text("x")
        store.put_many("s", {"a": r, "b": r})
        assert store.get_many("s", ["a"]) == {"a": r}  # a is now most recent
        store.put_many("s", {"c": r})
        assert set(store.get_many("s", ["a", "b", "c"])) == {"a", "c"}
        now[0] = 11.0
        assert store.get_many("s", ["a", "c"]) == {}

    def test_scopes_are_separate(self) -> None:
        store = store_from_url("memory://")
        store.put_many("tenant-a", {"k": Reasoning.from_text("mine")})
        assert store.get_many("tenant-b", ["k"]) == {}

    def test_oversized_record_is_not_kept(self) -> None:
        store = MemoryStore(max_record_bytes=10)
        store.put_many("s", {"k": Reasoning.from_text("x" * 11)})
        assert store.get_many("s", ["k"]) == {}

    def test_unknown_url(self) -> None:
        with pytest.raises(ValueError, match="unsupported"):
            store_from_url("mongodb://x")


class TestPendingCaptures:
    def test_retry_of_a_call_closes_its_first_attempt(self) -> None:
        """A Router retry re-opens the same call id; nothing waits on the first attempt after."""
        from litellm_reasoning.memo.pending import PendingCaptures

        pending = PendingCaptures()
        pending.open("c1", "s", "d")
        first = pending.pending("s", "d")
        pending.open("c1", "s", "d")
        assert all(e.is_set() for e in first)
        assert len(pending.pending("s", "d")) == 1
        pending.close("c1")
        assert pending.pending("s", "d") == [] and len(pending) == 0

    def test_a_capture_is_found_by_its_place_and_its_close_is_remembered(self) -> None:
        """A call filed under its reply's place is found there too; closing it forgets both
        and remembers that the place closed (a read under way when it closed reads again)."""
        from litellm_reasoning.core.identity import place_of
        from litellm_reasoning.memo.pending import PendingCaptures

        place = place_of((b'{"role":"user"}', 1, "sys"))
        assert place.startswith("@") and place != place_of((b'{"role":"user"}', 2, "sys"))
        pending = PendingCaptures()
        pending.open("c1", "s", "d", owner="state", place=place)
        [(event, owner)] = pending.owners("s", place)
        assert owner == "state" and pending.owners("t", place) == []
        before = pending.closes
        assert not pending.closed_since("s", place, before)
        pending.close("c1")
        assert event.is_set() and pending.owners("s", place) == []
        assert pending.pending("s", "d") == []
        assert pending.closed_since("s", place, before)
        assert not pending.closed_since("s", place, pending.closes)
        assert not pending.closed_since("t", place, before)

    def test_open_captures_are_bounded(self) -> None:
        from litellm_reasoning.memo.pending import PendingCaptures

        pending = PendingCaptures(max_open=3)
        for n in range(10):
            pending.open(f"c{n}", "s", f"d{n}")
        assert len(pending) <= 3
        assert pending.pending("s", "d9")


# ---------------------------------------------------------------- the one limits decision


def test_leave_out_cuts_the_oldest_droppable_in_half_budget_steps() -> None:
    from litellm_reasoning.core.limits import leave_out

    tokens = {1: 100, 3: 100, 5: 100, 7: 100}
    left = leave_out(
        [1, 3, 5, 7], tokens, max_tokens=250, droppable={1, 3, 5}, unread={}, leading_run=False
    )
    # 400 in a 250 budget: 150 to cut, rounded up to whole half-budget steps (250): the three
    # oldest, and never the one that is not droppable.
    assert (left.over_budget, left.leading_run) == ([1, 3, 5], [])
    nothing_droppable = leave_out(
        [1, 3, 5, 7], tokens, max_tokens=250, droppable=(), unread={}, leading_run=False
    )
    assert nothing_droppable.over_budget == []


def test_leave_out_counts_unread_records_and_always_leaves_them_out() -> None:
    from litellm_reasoning.core.limits import leave_out

    left = leave_out(
        [5, 7], {5: 10, 7: 10}, max_tokens=1000, droppable={1, 5}, unread={1: 5}, leading_run=False
    )
    assert left.over_budget == [1]  # within the budget, but never read: not sent


def test_leave_out_keeps_what_goes_one_leading_run() -> None:
    from litellm_reasoning.core.limits import leave_out

    # The policy skipped message 4 (its block may have existed): every kept one before it goes.
    left = leave_out(
        [1, 3, 6], {}, max_tokens=None, droppable=(), unread={}, leading_run=True, skipped=[4]
    )
    assert (left.over_budget, left.leading_run) == ([], [1, 3])
    # Without the rule nothing goes.
    free = leave_out(
        [1, 3, 6], {}, max_tokens=None, droppable=(), unread={}, leading_run=False, skipped=[4]
    )
    assert (free.over_budget, free.leading_run) == ([], [])
    # Over the budget the cut message counts too: message 3 goes, so message 1 before it does.
    cut = leave_out(
        [1, 3, 6],
        {1: 10, 3: 500, 6: 10},
        max_tokens=100,
        droppable={3},
        unread={},
        leading_run=True,
    )
    assert (cut.over_budget, cut.leading_run) == ([3], [1])


def test_a_record_is_never_falsy_and_plan_tells_an_empty_one_from_none() -> None:
    """Fast paths find a missing record with `any` / `all` (in C, no `__eq__` per record):
    a record, even one with no parts, and a decoded store value must stay truthy; and an empty
    record the client sent is still its own reasoning to the plan, not a missing one."""
    from litellm_reasoning.stores._codec import _decoded

    assert Reasoning() and _decoded("scope", 0.0, None, 0)
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "more"},
        {"role": "assistant", "content": "b"},
    ]
    dialect = get_dialect("openai_chat_required")
    wanted = plan(
        messages,
        dialect,
        TurnPolicy.ALL_TURNS,
        [None, Reasoning(), None, None],
        [1, 3],
        turn_start=2,
    )
    assert wanted == [3]
    assert plan(messages, dialect, TurnPolicy.ALL_TURNS, [None] * 4, [1, 3], turn_start=2) == [1, 3]
