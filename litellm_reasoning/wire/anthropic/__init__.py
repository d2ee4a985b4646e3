"""Claude on the Anthropic API, Bedrock and Vertex: signed `thinking` / `redacted_thinking`
blocks (`dialect`), where they stood among a reply's content (`layout`), the Anthropic
Messages format of `/v1/messages` (`messages`) and the provider body LiteLLM builds (`body`)."""
