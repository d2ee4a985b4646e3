"""Per-process memory: bounded, thread-safe caches and waits the engine keeps between requests
(what the conversation's earlier request hashed, captures still running, refused records)."""
