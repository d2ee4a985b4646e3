"""Build the vcrpy cassettes in this folder from real provider recordings.

Run once; the output is committed and the tests only read the output:

    python cassettes/build_cassettes.py [--source /path/to/realdata]

`--source` (or `REALDATA_DIR`) is the folder holding the copied third-party recordings
(`pydantic-ai/...`, `vercel-ai/...`, see `cassettes/README.md`). Every cassette gets a header
comment naming its source file, repository, commit and licence, and saying which interactions
are recorded and which were synthesized here.

Two input formats are converted:

* pydantic-ai cassettes, whose JSON bodies sit under `parsed_body` instead of `body`: the
  request body becomes a JSON string again, the response body `{"string": <JSON>}`;
* vercel-ai `*.chunks.txt`, one SSE payload per line and no request: the body becomes
  `data: <line>\\n\\n` ... `data: [DONE]\\n\\n` and the request is synthesized.

Single-request recordings get one synthesized follow-up interaction (a client request built
from the recorded reply, and a minimal reply that is marked as not recorded), so the tests can
look at what the request after a recorded reply sends on the wire.
"""
