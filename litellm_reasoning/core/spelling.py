"""What a mistyped setting is answered with: the closest valid name, and the one reading of a
boolean switch. Pure: settings, store URLs, the callback's keywords and the patch switch share
it, so every mistake is refused the same way."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

BOOLEAN_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)`, or nothing when no choice is close."""
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def boolean(text: str) -> bool:
    """`text` as one of true/false/1/0/yes/no (any case, spaces around); anything else is a
    ValueError (a typo must not read as "on")."""
    word = text.strip().lower()
    if word not in BOOLEAN_WORDS:
        raise ValueError(f"{text!r} is not a boolean: use true/false, 1/0 or yes/no")
    return BOOLEAN_WORDS[word]
