"""A LiteLLM callback that does nothing: the benchmark's baseline for what LiteLLM itself costs
once any callback is registered (its logging objects, success handlers on its thread pool, the
standard logging payload). The proxy loads it as `empty_callback.callback`."""

from __future__ import annotations

from litellm.integrations.custom_logger import CustomLogger


class EmptyLogger(CustomLogger):
    """Inherits every hook as a no-op."""


callback = EmptyLogger()
