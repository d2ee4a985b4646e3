"""OpenAI Responses API recordings (native bodies and the chat bridge)."""

from __future__ import annotations

import json

from .common import PYDANTIC_AI, Interaction, Json, Spec, _sse_payloads, build_pydantic

# ---------------------------------------------------------------- OpenAI Responses API
#
# The recordings hold native Responses bodies (`input` items, `output` items, SSE events).
# `scripts/openai_responses_*.json` holds each recorded request body (the native client side),
# `echoes` (`{input index: [reply j, output index]}`: which input items repeat which reply's
# output item) and `chat`: the same request as the OpenAI-shaped call a client that keeps
# reasoning makes through LiteLLM's chat bridge (`openai/responses/<model>`), with its own
# `echoes` (`{message index: reply j}`).


def _responses_output(interaction: Interaction) -> list[Json]:
    """A Responses reply's output items; for SSE, each item as `response.output_item.done`
    delivered it (the complete copy clients send back)."""
    body = interaction.response["body"]["string"]
    if "text/event-stream" not in str(interaction.response["headers"].get("content-type")):
        output: list[Json] = json.loads(body).get("output") or []  # none in an error reply
        return output
    done: dict[int, Json] = {}
    for event in _sse_payloads(body):
        if event.get("type") == "response.output_item.done":
            done[int(event["output_index"])] = event["item"]
    return [done[i] for i in sorted(done)]


def _item_text(item: Json) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def _same_item(sent: Json, produced: Json) -> bool:
    kind = sent.get("type", "message")
    if kind != produced.get("type") or kind == "reasoning":
        return False
    if kind == "function_call":
        return bool(sent.get("call_id")) and sent.get("call_id") == produced.get("call_id")
    return (
        sent.get("role") == "assistant"
        and bool(sent.get("id"))
        and sent.get("id") == produced.get("id")
    )


def _responses_chat(body: Json) -> Json:
    """A recorded Responses request as the chat call a client that keeps reasoning makes."""
    messages: list[Json] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    reasoning: list[Json] = []
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "reasoning":
            reasoning.append(item)
            continue
        last = messages[-1] if messages else None
        if kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            if last is not None and last["role"] == "assistant" and not reasoning:
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]}
            )
        else:
            messages.append({"role": item["role"], "content": _item_text(item)})
        if reasoning and messages[-1]["role"] == "assistant":
            messages[-1]["reasoning_items"] = reasoning
            reasoning = []
    out: Json = {"model": f"responses/{body['model']}", "messages": messages}
    if body.get("tools"):
        out["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description") or "",
                    "parameters": tool["parameters"],
                },
            }
            for tool in body["tools"]
        ]
    if body.get("stream"):
        out["stream"] = True
    return out


def responses_script(spec: Spec, interactions: list[Interaction]) -> Json:
    outputs = [_responses_output(item) for item in interactions]
    requests: list[Json] = []
    for k, item in enumerate(interactions):
        body = json.loads(item.request["body"])
        echoes: dict[str, list[int]] = {}
        for i, sent in enumerate(body["input"]):
            for j in range(k):
                for o, produced in enumerate(outputs[j]):
                    if _same_item(sent, produced):
                        echoes[str(i)] = [j, o]
        chat = _responses_chat(body)
        chat_echoes: dict[str, int] = {}
        for i, message in enumerate(chat["messages"]):
            if message["role"] != "assistant":
                continue
            ids = {call["id"] for call in message.get("tool_calls") or ()}
            for j in range(k):
                produced_ids = {o.get("call_id") for o in outputs[j] if o.get("call_id")}
                texts = "".join(_item_text(o) for o in outputs[j] if o.get("type") == "message")
                if (ids and ids <= produced_ids) or (not ids and message["content"] == texts):
                    chat_echoes[str(i)] = j
        requests.append(
            {"body": body, "echoes": echoes, "chat": {"body": chat, "echoes": chat_echoes}}
        )
    return {
        "cassette": f"{spec.name}.yaml",
        "provider": spec.provider,
        "api_base": spec.api_base,
        "requests": requests,
    }


RESPONSES_SPECS: tuple[Spec, ...] = (
    Spec(
        name="openai_responses_tool_loop",
        source="pydantic-ai/test_openai_responses/test_openai_responses_thinking_with_tool_calls.yaml",
        origin=PYDANTIC_AI,
        original_path="test_openai_responses/test_openai_responses_thinking_with_tool_calls.yaml",
        build=build_pydantic,
        summary=(
            "OpenAI Responses gpt-5, non-streaming tool loop: reasoning item (encrypted_content, "
            "summary) + function_call, then request 2 sends both back with the call's output"
        ),
        provider="openai",
        script=responses_script,
    ),
    Spec(
        name="openai_responses_stream_tool_call",
        source=(
            "pydantic-ai/test_openai_responses/"
            "test_openai_responses_phase_streamed_on_part_start.yaml"
        ),
        origin=PYDANTIC_AI,
        original_path=(
            "test_openai_responses/test_openai_responses_phase_streamed_on_part_start.yaml"
        ),
        build=build_pydantic,
        summary=(
            "OpenAI Responses gpt-5.5, SSE: reasoning item (encrypted_content), a commentary "
            "message and a function_call; request 2 sends them back with the call's output"
        ),
        provider="openai",
        script=responses_script,
    ),
    Spec(
        name="openai_responses_multi_turn",
        source="pydantic-ai/test_openai_responses/test_openai_responses_model_thinking_part.yaml",
        origin=PYDANTIC_AI,
        original_path="test_openai_responses/test_openai_responses_model_thinking_part.yaml",
        build=build_pydantic,
        summary=(
            "OpenAI Responses gpt-5, non-streaming: reasoning item + message; request 2 (a new "
            "user question) sends turn 1's reasoning item back"
        ),
        provider="openai",
        script=responses_script,
    ),
    Spec(
        name="openai_responses_modified_history",
        source=(
            "pydantic-ai/test_openai_responses/"
            "test_openai_responses_thinking_with_modified_history.yaml"
        ),
        origin=PYDANTIC_AI,
        original_path=(
            "test_openai_responses/test_openai_responses_thinking_with_modified_history.yaml"
        ),
        build=build_pydantic,
        summary=(
            "OpenAI Responses gpt-5, 3 recorded requests: reasoning item + message; request 2 "
            "sends the reasoning item (with its rs_ id) before an edited, id-less assistant "
            "message and gets 400 'provided without its required following item'; request 3 "
            "sends the edited history without reasoning items and gets 200"
        ),
        provider="openai",
        script=responses_script,
    ),
)
