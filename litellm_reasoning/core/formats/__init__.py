"""The conversation formats an entry point brings, read the same way: where the current turn
starts (`core.turns`, one rule for all), what identifies an item (its key material, chained
digests), which items carry reasoning under a policy, and what the limits leave out
(`core.limits.leave_out`, one decision for all).

* chat messages: `core.identity`, `core.render`, `core.limits` (the chat path);
* `blocks`: messages whose content is typed blocks, reasoning among them in place (the
  `/v1/messages` format);
* `items`: typed input items, reasoning as items of its own before the item it preceded (the
  Responses `input`).

Block and item *rendering* (what a provider takes back, streams, bodies) is the adapters' work
(`litellm_reasoning.wire`). Pure: no LiteLLM, no I/O, no locks.
"""
