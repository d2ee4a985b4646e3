"""The pure core: the reasoning model, the turn rule, identity, policy, rendering decisions and
targets. No LiteLLM, no I/O, no locks (tests/test_layering.py holds it to that)."""
