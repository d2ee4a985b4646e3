"""OpenAI Responses: encrypted reasoning items on chat calls LiteLLM bridges (`dialect`) and on
native Responses input (`input_items`: the turn rule on items, rendering and capture)."""
