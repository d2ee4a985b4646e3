"""Claude's provider body and raw reply, where LiteLLM's chat shape cannot carry what Claude
needs: each reply's blocks in the order they stood (LiteLLM puts every thinking block first),
the blocks of the sync path's body, thinking turned off for a tool loop with no block to send,
and what the raw reply says (its block order, `input_transformations`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...core.dialect import Layouts
from ...core.extract import BLOCK_TYPES
from ...core.reasoning import Reasoning
from ...core.render import Rendered
from .dialect import (
    THINKING_OFF_BY_DEFAULT,
    THINKING_ON_BY_DEFAULT,
    apply_converse_layout,
    apply_layout,
    chat_layout,
    empty_content,
    inline_blocks,
    layout_of_blocks,
    layout_of_deltas,
    ordered_blocks,
    thinking_requested,
)


def layouts_of(
    sent: Sequence[Any], rendered: Rendered, stored: Mapping[int, Reasoning]
) -> tuple[dict[int, tuple[tuple[str, ...], list[dict[str, Any]]]], list[int], list[Any] | None]:
    """For each kept Claude message whose record knows where its blocks stood: the layout and
    its blocks in their original order. A client that kept the blocks gets them in that order
    too (LiteLLM and many clients regroup or reorder them), when they are exactly the recorded
    blocks; those whose order the client's message would not have kept (`sent`: the messages as
    the client sent them) are listed second ("reordered"); third, the rendered messages with
    their blocks in that order (None: no message changed; a new list otherwise)."""
    out: dict[int, tuple[tuple[str, ...], list[dict[str, Any]]]] = {}
    reordered: list[int] = []
    messages: list[Any] | None = None
    restored = set(rendered.restored)
    for index in rendered.kept:
        message = rendered.messages[index]
        blocks = message.get("thinking_blocks") if isinstance(message, dict) else None
        blocks = blocks if isinstance(blocks, list) else []
        original = sent[index] if index < len(sent) and isinstance(sent[index], dict) else None
        found = ordered_blocks(stored.get(index), blocks)
        if found is None:
            # Not the recorded blocks: blocks the client sent inline in its content go out in
            # the client's own order (rendering moved them to `thinking_blocks`, which LiteLLM
            # puts first).
            own = chat_layout(original) if original and inline_blocks(original) else ()
            if own and own.count("r") == len(blocks):
                out[index] = (own, blocks)
            continue
        out[index] = found
        if blocks != found[1]:
            if messages is None:
                messages = list(rendered.messages)
            messages[index] = {**message, "thinking_blocks": found[1]}
        if index not in restored and original and chat_layout(original) != found[0]:
            reordered.append(index)
    return out, reordered, messages


def thinking_left_on(params: Sequence[Any], default: str = THINKING_OFF_BY_DEFAULT) -> bool:
    """Whether a request leaves Claude's thinking on (`thinking_requested`; `params`: its keyword
    dicts, whose `optional_params` and `extra_body` are read too; `default`: the model's
    `thinking_default_of`). With it on, a tool loop with no thinking block we can send (a
    fallback from another provider, a store miss, `tool_loop_needs_thinking`) is refused ("Expected
    `thinking` or `redacted_thinking`, but found `tool_use`"), so thinking goes off for that call
    only, as LiteLLM's `modify_params` does."""
    extra = [p.get("optional_params") for p in params if isinstance(p, dict)]
    extra += [p.get("extra_body") for p in [*params, *extra] if isinstance(p, dict)]
    return thinking_requested([*params, *extra], default)


def turn_thinking_off(params: dict[str, Any], default: str) -> None:
    """Thinking off in `params` (a request's keyword dict or a provider body) for a model whose
    `thinking_default_of` is `default` (never `THINKING_ALWAYS_ON`: that thinking cannot go
    off): the parameters that turn it on removed, and for a model that thinks unless told
    otherwise, `thinking: {"type": "disabled"}` (Anthropic's model pages)."""
    params.pop("reasoning_effort", None)
    if default == THINKING_ON_BY_DEFAULT:
        params["thinking"] = {"type": "disabled"}
    else:
        params.pop("thinking", None)


def without_thinking_blocks(message: Any) -> Any:
    if isinstance(message, dict) and "thinking_blocks" in message:
        return {k: v for k, v in message.items() if k != "thinking_blocks"}
    return message


def assistant_runs(messages: Sequence[Any]) -> list[list[int]]:
    """Indices of the rendered assistant messages, grouped as the Anthropic body holds them
    (LiteLLM merges consecutive assistant messages; system messages leave the list)."""
    runs: list[list[int]] = []
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role in ("system", "developer"):
            continue
        if role == "assistant":
            if previous == "assistant":
                runs[-1].append(index)
            else:
                runs.append([index])
        previous = role
    return runs


Arrange = Callable[[Sequence[Any], Sequence[str], Sequence[dict[str, Any]]], list[Any] | None]
"""Lays one provider-body assistant content out (`apply_layout`, `apply_converse_layout`)."""


def lay_out_body(
    body: dict[str, Any],
    rendered: Sequence[Any],
    layouts: Layouts,
    arrange: Arrange = apply_layout,
) -> None:
    """Each laid-out assistant message of the provider body LiteLLM built (Anthropic's, or
    Bedrock Converse's with `apply_converse_layout`), its blocks where they stood in the
    reply. A message that does not line up is left as LiteLLM built it."""
    wire = body.get("messages")
    if not isinstance(wire, list) or not layouts:
        return
    answers = [m for m in wire if isinstance(m, dict) and m.get("role") == "assistant"]
    runs = assistant_runs(rendered)
    if len(runs) != len(answers):
        return
    for run, sent in zip(runs, answers, strict=True):
        _lay_out(run, sent, layouts, arrange)


def lay_out_converse_body(body: dict[str, Any], rendered: Sequence[Any], layouts: Layouts) -> None:
    """`lay_out_body` for the Bedrock Converse body LiteLLM built (before it signs it)."""
    lay_out_body(body, rendered, layouts, apply_converse_layout)


def _lay_out(
    run: Sequence[int], sent: dict[str, Any], layouts: Layouts, arrange: Arrange = apply_layout
) -> None:
    """One provider-body assistant message (`run`: the rendered messages it was made of) with
    its blocks where they stood, when its one rendered message has a layout and lines up."""
    found = layouts.get(run[0]) if len(run) == 1 else None
    content = sent.get("content")
    if found is not None and isinstance(content, list):
        laid_out = arrange(content, *found)
        if laid_out is not None:
            sent["content"] = laid_out


def check_lines_up(body: dict[str, Any], rendered: Sequence[Any]) -> None:
    """Raises unless each assistant message of the Anthropic body stands for rendered
    assistant messages of which at most one carries blocks (what `put_blocks` needs)."""
    runs = assistant_runs(rendered)
    answers = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") == "assistant"]
    if len(runs) != len(answers) or any(
        sum(bool(rendered[i].get("thinking_blocks")) for i in run) > 1 for run in runs
    ):
        raise RuntimeError(
            "the Anthropic body does not line up with the rendered messages; left as LiteLLM "
            "built it"
        )


def put_blocks(
    body: dict[str, Any],
    rendered: Sequence[Any],
    layouts: Layouts,
    *,
    thinking_off: str | None,
) -> None:
    """The sync path: each assistant message of the Anthropic body LiteLLM translated from the
    client's messages gets its rendered thinking blocks in its content, where they stood in the
    reply when its record says so, first otherwise (none when `thinking_off`, the model's
    `thinking_default_of` when thinking goes off for this call: `turn_thinking_off` on the
    body). The caller checks first that the body lines up (`check_lines_up`)."""
    runs = assistant_runs(rendered)
    answers = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") == "assistant"]
    for run, sent in zip(runs, answers, strict=True):
        blocks: list[Any] = []
        if thinking_off is None:
            for index in run:
                blocks += rendered[index].get("thinking_blocks") or []
        content = sent.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        if not isinstance(content, list):
            continue
        # Text the client's messages never had is LiteLLM's placeholder for empty content
        # (1.106/1.108): not part of the reply the blocks go back into.
        placeholder = bool(blocks) and all(empty_content(rendered[i]) for i in run)
        rest = [
            part
            for part in content
            if not (isinstance(part, dict) and part.get("type") in BLOCK_TYPES)
            and not (placeholder and isinstance(part, dict) and part.get("type") == "text")
        ]
        sent["content"] = [*blocks, *rest]
        if thinking_off is None:
            _lay_out(run, sent, layouts)
    if thinking_off is not None:
        turn_thinking_off(body, thinking_off)


def raw_reply(source: Any) -> dict[str, Any] | None:
    """A Claude reply's raw JSON body, as LiteLLM keeps it in its logging details (`source`;
    None: streamed, or not JSON)."""
    if not isinstance(source, dict):
        return None
    raw = source.get("original_response")
    if not isinstance(raw, str | bytes) or not raw:
        return None
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def reply_layout(chunks: Iterable[Any] | None, raw: dict[str, Any] | None) -> tuple[str, ...]:
    """Where Claude's blocks stood in the reply (`layout_of_*`): from the stream's chunks, or
    from the raw body (Anthropic's `content`, Bedrock Converse's `output.message.content`).
    Empty when unknown."""
    if chunks is not None:
        return layout_of_deltas(
            choices[0].delta
            for chunk in chunks
            if (choices := getattr(chunk, "choices", None)) and getattr(choices[0], "delta", None)
        )
    if raw is None:
        return ()
    content = raw.get("content")
    if content is None:  # Bedrock Converse
        content = ((raw.get("output") or {}).get("message") or {}).get("content")
    return layout_of_blocks(content) if isinstance(content, list) else ()


_SECRET_FIELDS = frozenset({"thinking", "signature", "data", "text", "encrypted_content"})


def input_transformations(response: Any, raw: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A Claude reply's top-level `input_transformations` (blocks of the request the API dropped
    or let through silently): LiteLLM 1.110 moves them onto the message's
    `provider_specific_fields`; 1.106 leaves them in the raw body only."""
    choices = getattr(response, "choices", None) or ()
    message = getattr(choices[0], "message", None) if choices else None
    psf = getattr(message, "provider_specific_fields", None)
    found = psf.get("input_transformations") if isinstance(psf, dict) else None
    if found is None and raw is not None:
        found = raw.get("input_transformations")
    if not isinstance(found, list):
        return []
    # Scalars only (reason, kind, indices): a transformed block's own text or signature must
    # not reach logs or spend-log metadata.
    return [
        {
            k: v
            for k, v in t.items()
            if isinstance(v, str | int | float | bool) and k not in _SECRET_FIELDS
        }
        for t in found
        if isinstance(t, Mapping)
    ]
