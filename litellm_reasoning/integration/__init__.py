"""The LiteLLM layer: the only package that imports LiteLLM, and the only fail-open boundary.

Never add a module named `callback` here or anywhere in the package: the proxy resolves
`litellm_reasoning.callback` with `getattr` on the package."""
