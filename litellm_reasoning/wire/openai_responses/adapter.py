"""The Responses family beside rendering: which servers make their own reasoning blobs."""

from __future__ import annotations

from typing import ClassVar

from .._base import BaseAdapter
from .dialect import ENDPOINT_ISSUERS


class ResponsesAdapter(BaseAdapter):
    endpoint_issuers: ClassVar[frozenset[str]] = ENDPOINT_ISSUERS
