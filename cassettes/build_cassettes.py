"""Build the vcrpy cassettes in this folder from real provider recordings (the `builder`
package, one module per source family):

    python cassettes/build_cassettes.py [--source /path/to/realdata]

Run once; the output is committed and the tests only read it. See `builder/__init__.py`."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from builder.common import *  # noqa: F403  (build_provider_cassettes reads its helpers here)
from builder.common import (
    _SYNTHESIZED_TEXT,
    _dumps,
    _json_response,
    _pydantic_interactions,
    _request,
    _sse_payloads,
    _synthesized_reply,
)
from builder.write import _header_comment, main

__all__ = [
    "_SYNTHESIZED_TEXT",
    "_dumps",
    "_header_comment",
    "_json_response",
    "_pydantic_interactions",
    "_request",
    "_sse_payloads",
    "_synthesized_reply",
]

if __name__ == "__main__":
    main()
