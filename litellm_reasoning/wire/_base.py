"""Defaults every dialect shares, so each one states only what its provider does differently."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ..core.dialect import REASONING_KEYS, Dialect, Finished, strip_reasoning
from ..core.policy import TurnPolicy
from ..core.reasoning import Reasoning
from ..core.render import Rendered


class BaseDialect:
    """A dialect that patches nothing after LiteLLM and has no validity rule of its own."""

    name: ClassVar[str] = ""
    platform: ClassVar[str] = ""
    passthrough: ClassVar[bool] = False
    accepts_reasoning: ClassVar[bool] = True
    prefers_opaque: ClassVar[bool] = False
    patches_body: ClassVar[bool] = False
    patches_wire: ClassVar[bool] = False
    keeps_block_order: ClassVar[bool] = False
    requires_reasoning: ClassVar[bool] = False
    has_tool_loop_rule: ClassVar[bool] = False
    streams_details_apart: ClassVar[bool] = False
    input_items: ClassVar[bool] = False

    def accepts(self, reasoning: Reasoning) -> bool:
        return True

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        raise NotImplementedError

    def plain_fields(self, reasoning: Reasoning | None) -> dict[str, Any] | None:
        return None

    def validity_start(self, messages: Sequence[Any]) -> int | None:
        return None

    def patch_wire(self, sent: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
        return sent

    def finish(
        self, sent: Sequence[Any], rendered: Rendered, stored: Mapping[int, Reasoning], model: str
    ) -> Finished:
        return Finished()

    def for_records(
        self, stored: Mapping[int, Reasoning], provider: str | None, model: str, origin: str
    ) -> str | None:
        return None

    def prepare_request(self, params: dict[str, Any], model: str, policy: TurnPolicy) -> None:
        return None


__all__ = ["REASONING_KEYS", "BaseDialect", "Dialect", "Finished", "strip_reasoning"]
