"""Bedrock's non-Claude models (Nova 2, DeepSeek, Qwen, GLM, MiniMax): a signed
`reasoningContent` is refused ("This model doesn't support the
reasoningContent.reasoningText.signature field"), and DeepSeek-R1 refuses reasoning content
altogether, so none is ever sent there, whatever the client kept (a conversation that switched
from Claude carries signed blocks). Against a local Converse server that refuses like Bedrock."""

from __future__ import annotations

import asyncio
from typing import Any

import litellm
import pytest
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.bedrock_upstream import BedrockConverseUpstream

SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgx-bedrock-claude=="
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Which file?"},
    {
        "role": "assistant",
        "content": "a.py.",
        "reasoning_content": "The user wants a file name.",
        "thinking_blocks": [
            {"type": "thinking", "thinking": "The user wants a file name.", "signature": SIG}
        ],
    },
    {"role": "user", "content": "Why that one?"},
]
MODELS = ["us.amazon.nova-2-lite-v1:0", "us.deepseek.r1-v1:0", "qwen.qwen3-32b-v1:0"]

pytestmark = pytest.mark.usefixtures("fake_aws")


async def _call(how: str, model: str, endpoint: str) -> Any:
    params: dict[str, Any] = {
        "model": f"bedrock/converse/{model}",
        "messages": [dict(m) for m in HISTORY],
        "aws_bedrock_runtime_endpoint": endpoint,
    }
    if how == "router.acompletion":
        router = litellm.Router(
            model_list=[{"model_name": "g", "litellm_params": {**params, "messages": None}}],
            num_retries=0,
        )
        return await router.acompletion(model="g", messages=params["messages"])
    if how == "completion":
        return await asyncio.to_thread(litellm.completion, **params)
    return await litellm.acompletion(**params)


def _lib_version() -> str:
    from importlib.metadata import version

    return version("litellm")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("how", ["acompletion", "router.acompletion", "completion"])
async def test_no_reasoning_reaches_a_non_claude_bedrock_model(
    callback: ReasoningCallback, how: str, model: str
) -> None:
    with BedrockConverseUpstream() as bedrock:
        bedrock.always(model, "Because it is the entry point.")
        reply = await _call(how, model, bedrock.base_url)
        (sent,) = bedrock.bodies()
    assert reply.choices[0].message.content == "Because it is the entry point."
    assert bedrock.refusals == []
    blocks = [block for m in sent["messages"] for block in m["content"]]
    assert not [b for b in blocks if "reasoningContent" in b]
    assert sent["messages"][1]["content"] == [{"text": "a.py."}]


async def test_without_the_row_the_signed_block_is_refused() -> None:
    """The control: the same request with the callback told to pass Bedrock through."""
    if not _lib_version().startswith("1.106."):
        pytest.skip("LiteLLM 1.108+ leaves the signature out for these models itself")
    callback = register(ReasoningCallback(dialects={"bedrock/*": "passthrough"}))
    try:
        with BedrockConverseUpstream() as bedrock:
            bedrock.always(MODELS[0], "never")
            with pytest.raises(litellm.BadRequestError, match=r"reasoningText\.signature"):
                await _call("acompletion", MODELS[0], bedrock.base_url)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert bedrock.refusals and callback.stats["stripped"] == 0
