"""Helpers to run LiteLLM with the callback against local servers (tests, demo, conformance)."""
