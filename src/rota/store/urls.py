"""Masking the password of a store URL, for messages and logs.

A module of its own so that every adapter and `rota.store` itself can use it without
importing one another.

Imports only the standard library.
"""

from __future__ import annotations

import re

# userinfo "user:password@" right after the scheme; greedy up to the last "@", so that an
# un-encoded "@", "/", "#" or "?" in the password is masked too (over-masking is harmless).
_USERINFO_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*):.*@")
_QUERY_PASSWORD = re.compile(r"([?&](?:password|passwd|pwd)=)[^&#]*", re.IGNORECASE)


def mask_url(url: str) -> str:
    """`url` with any password replaced by ***, for messages and logs.

    Works on malformed URLs too (an un-encoded password is exactly what makes a URL
    malformed), and masks `password=` query parameters.
    """
    masked = _USERINFO_PASSWORD.sub(r"\1:***@", url)
    return _QUERY_PASSWORD.sub(r"\1***", masked)
