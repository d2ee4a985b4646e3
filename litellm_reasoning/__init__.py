"""Keep every LiteLLM-routed model's reasoning right across requests.

    import litellm
    from litellm_reasoning import ReasoningCallback
    litellm.callbacks = [ReasoningCallback()]

Importing the package has no side effects and does not import LiteLLM; `callback` (the ready
instance the proxy's `litellm_settings: callbacks: litellm_reasoning.callback` loads) is created
on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.policy import TurnPolicy
from .core.reasoning import Reasoning, ReasoningPart

if TYPE_CHECKING:
    from .integration.reasoning_callback import ReasoningCallback

from ._version import __version__

_callback_instance: ReasoningCallback | None = None


def __getattr__(name: str) -> Any:
    global _callback_instance
    if name == "ReasoningCallback":
        from .integration.reasoning_callback import ReasoningCallback

        return ReasoningCallback
    if name == "callback":
        if _callback_instance is None:
            from .settings import callback_for_the_proxy

            _callback_instance = callback_for_the_proxy()
        return _callback_instance
    raise AttributeError(f"module 'litellm_reasoning' has no attribute {name!r}")


__all__ = ["Reasoning", "ReasoningCallback", "ReasoningPart", "TurnPolicy", "__version__"]
