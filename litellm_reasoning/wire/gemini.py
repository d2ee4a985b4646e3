"""Gemini thought signatures: the Gemini API (`gemini/`) and Vertex AI (`vertex_ai/` Gemini models).

What Gemini takes back (shared notes, provider rules §3):

* a `thoughtSignature` on the Part it came on: the text part, or the first `functionCall` part of
  each step (parallel calls: only the first is signed);
* Gemini 3+ validates the current turn only: the first `functionCall` of each of its steps must
  be signed (400 "Function call is missing a thought_signature" otherwise); earlier turns are not
  validated, so they go without thoughts and signatures (Gemini 3.5+ keeps earlier thinking "all
  or none": the model table gives those models `all_turns`);
* a function call the model did not make (another provider's, before a switch) can carry the
  documented dummy signature instead.

How LiteLLM carries it (verified in 1.106.12 and 1.110.2, `vertex_ai/gemini/transformation.py`,
`prompt_templates/factory.py`): thought text as `reasoning_content` (sent back as a
`{"thought": true}` part), the text part's signature as message
`provider_specific_fields.thought_signatures[0]`, a call's signature as the tool call's
`provider_specific_fields.thought_signature` or in its id (`call_…__thought__<signature>`). This
dialect renders those fields and always cleans the id, so an id a client kept verbatim never sends
a signature the turn rule left out.

Issuers. Signatures go back only to the platform that issued them: the Gemini API and Vertex
(scoped to a Google Cloud project) count as two. A foreign one is not an error Gemini reports
(it omits "incompatible" thoughts) but a corrupted one is a 400, and a dummy signature costs
nothing more than a foreign one, so the conservative choice is to never cross. Thought text from
another provider is left out too: a Gemini thought part made of another model's text carries no
state Gemini can use. Pure: no LiteLLM, no I/O.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from ..core.extract import GEMINI, canonical_signature, signature_bytes, split_tool_call_id
from ..core.messages import is_assistant
from ..core.reasoning import Reasoning
from ..core.render import Rendered
from ._base import BaseAdapter, BaseDialect, Finished, strip_reasoning

DUMMY_SIGNATURE = base64.b64encode(b"context_engineering_is_the_way_to_go").decode("ascii")
"""Google's documented stand-in for a signature Gemini never issued (FAQ of
ai.google.dev/gemini-api/docs/thought-signatures); the recorded pydantic-ai client sends exactly
these bytes for another model's function call and Gemini 3 answers 200."""

GEMINI_ISSUERS = {
    "gemini": frozenset({"gemini"}),
    "vertex_ai": frozenset({"vertex_ai", "vertex_ai_beta"}),
}
"""Target platform -> the LiteLLM providers whose signatures it accepts."""

_BEFORE_GEMINI_3 = re.compile(
    r"^gemini-(?:[12](?:\.\d+)?|exp|(?:pro|flash)(?!-(?:lite-)?latest$))(?:-|$)", re.IGNORECASE
)
"""Models that take unsigned function calls (the same test LiteLLM uses for its own fallback)."""


def requires_signed_calls(model: str) -> bool:
    """Whether `model` rejects a current-turn step whose first function call is unsigned."""
    name = model.rsplit("/", 1)[-1]
    return name.lower().startswith("gemini-") and not _BEFORE_GEMINI_3.match(name)


def _clean_ids(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not any(
        isinstance(c, dict) and split_tool_call_id(c.get("id"))[1] for c in calls
    ):
        return message
    cleaned = [
        {**call, "id": split_tool_call_id(call.get("id"))[0]}
        if isinstance(call, dict) and split_tool_call_id(call.get("id"))[1]
        else call
        for call in calls
    ]
    return {**message, "tool_calls": cleaned}


def _signed_call(call: Any, signature: str) -> Any:
    if not isinstance(call, dict):
        return call
    return {**call, "provider_specific_fields": {"thought_signature": signature}}


def first_call_signature(message: Any) -> str | None:
    """The signature LiteLLM would put on `message`'s first function call, if any."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
        return None
    psf = calls[0].get("provider_specific_fields")
    signature = psf.get("thought_signature") if isinstance(psf, dict) else None
    return signature if isinstance(signature, str) and signature else None


class GeminiDialect(BaseDialect):
    """Gemini on the Gemini API: signatures and thought text from the Gemini API, or the client."""

    name: ClassVar[str] = "gemini"
    platform: ClassVar[str] = "gemini"
    prefers_opaque: ClassVar[bool] = True
    body_is_contents: ClassVar[bool] = True

    def accepts(self, reasoning: Reasoning) -> bool:
        """Issued on this platform, or sent by the client itself (no issuer known)."""
        return reasoning.provider is None or reasoning.provider in GEMINI_ISSUERS.get(
            self.platform, frozenset()
        )

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = _clean_ids(strip_reasoning(message))
        if reasoning is None or not self.accepts(reasoning):
            return out
        if reasoning.text:
            out["reasoning_content"] = reasoning.text
        texts = [p.data for p in reasoning.parts if p.data and p.details.get(GEMINI) == "text"]
        if texts:
            out["provider_specific_fields"] = {"thought_signatures": texts}
        calls = out.get("tool_calls")
        if isinstance(calls, list):
            calls = list(calls)
            for part in reasoning.parts:
                if not part.data or part.details.get(GEMINI) != "tool_call":
                    continue
                index = _call_index(calls, part.details)
                if index is not None:
                    calls[index] = _signed_call(calls[index], part.data)
            out["tool_calls"] = calls
        return out

    def finish(
        self, sent: Sequence[Any], rendered: Rendered, stored: Mapping[int, Reasoning], model: str
    ) -> Finished:
        """Results' ids without LiteLLM's signature suffix; and Gemini 3+ rejects a
        current-turn step whose first function call is unsigned (a call another provider made
        before a switch, a store miss): it gets the signature the client kept in the call's
        id, or the documented dummy."""
        messages = clean_tool_results(rendered.messages)
        if not requires_signed_calls(model):
            return Finished(messages=messages)
        messages, from_ids, dummies = sign_current_steps(
            sent, messages, rendered.turn_start, rendered.missing
        )
        return Finished(signed_from_ids=from_ids, dummy_signed=dummies, messages=messages)


def _call_index(calls: list[Any], where: dict[str, Any]) -> int | None:
    """Which call a stored signature belongs to: the same id, else the same position."""
    ids = [split_tool_call_id(c.get("id"))[0] if isinstance(c, dict) else "" for c in calls]
    wanted = where.get("id")
    if isinstance(wanted, str) and wanted and wanted in ids:
        return ids.index(wanted)
    index = where.get("index")
    if isinstance(index, int) and 0 <= index < len(calls) and not wanted:
        return index
    return None


class VertexGeminiDialect(GeminiDialect):
    """Gemini on Vertex AI: Vertex-issued signatures only."""

    name: ClassVar[str] = "gemini_vertex"
    platform: ClassVar[str] = "vertex_ai"


def sign_current_steps(
    sent: Sequence[Any],
    rendered: list[Any],
    turn_start: int,
    missing: Sequence[int],
) -> tuple[list[Any], list[int], list[int]]:
    """`rendered` with the first function call of every current-turn step signed.

    A step is a run of consecutive assistant messages (LiteLLM sends it as one `model` content).
    When its first call carries no signature after restoring: the signature the client kept in
    the call's id, if the store had no record for that message at all (`missing`; a record that
    was left out as foreign stays out), else the dummy signature.

    Returns the messages, the indices given the client's id signature and those given the dummy.
    """
    out = list(rendered)
    from_ids: list[int] = []
    dummies: list[int] = []
    index = max(turn_start + 1, 0)
    while index < len(out):
        if not is_assistant(out[index]):
            index += 1
            continue
        end = index
        while end < len(out) and is_assistant(out[end]):
            end += 1
        step = next((i for i in range(index, end) if out[i].get("tool_calls")), None)
        index = end
        if step is None or first_call_signature(out[step]) is not None:
            continue
        kept = _id_signature(sent[step]) if step in missing and step < len(sent) else None
        calls = list(out[step]["tool_calls"])
        calls[0] = _signed_call(calls[0], kept or DUMMY_SIGNATURE)
        out[step] = {**out[step], "tool_calls": calls}
        (from_ids if kept else dummies).append(step)
    return out, from_ids, dummies


def _id_signature(message: Any) -> str | None:
    """The signature a client kept in its first tool call's id, canonical."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
        return None
    signature = split_tool_call_id(calls[0].get("id"))[1]
    return canonical_signature(signature) if signature else None


def clean_tool_results(messages: list[Any]) -> list[Any]:
    """`messages` with LiteLLM's signature suffix cut off tool results' `tool_call_id`s too.

    The dialect cleans the calls' ids (a kept id must not carry a signature the turn rule left
    out), and LiteLLM pairs a result with its call by exact id before building the Gemini
    `functionResponse` (whose id it sends without the suffix anyway)."""
    out = list(messages)
    for index, message in enumerate(out):
        if isinstance(message, dict) and message.get("role") in ("tool", "function"):
            clean, signature = split_tool_call_id(message.get("tool_call_id"))
            if signature:
                out[index] = {**message, "tool_call_id": clean}
    return out


LITELLM_PLACEHOLDER_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode()
"""What LiteLLM puts in place of a thought signature it does not want validated."""


def placeholders_for(restored: Iterable[Reasoning], body: Any) -> bool:
    """A Gemini body, sent again for a call into which the `restored` signed records went, in
    which LiteLLM replaced those signatures by its skip-validator placeholder (none of ours is
    left, a placeholder is there): LiteLLM 1.110+ retrying a signature refusal itself."""
    if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
        return False
    ours = {
        signature_bytes(value)
        for record in restored
        for part in record.parts
        for value in (part.signature, part.data)
        if value
    }
    if not ours:
        return False
    sent: list[str] = [
        part["thoughtSignature"]
        for content in body["contents"]
        if isinstance(content, dict)
        for part in content.get("parts") or ()
        if isinstance(part, dict) and isinstance(part.get("thoughtSignature"), str)
    ]
    if any(signature_bytes(value) in ours for value in sent):
        return False
    return LITELLM_PLACEHOLDER_SIGNATURE in sent


class GeminiAdapter(BaseAdapter):
    def retried_by_litellm(self, restored: Sequence[Reasoning], body: Any) -> bool:
        return placeholders_for(restored, body)
