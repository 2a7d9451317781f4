"""Who may press the dashboard's buttons: the token, its cookie, and the cross-site check.

- Reads (every GET) need nothing: bind to 127.0.0.1 (the default) or put the dashboard
  behind your own authentication to keep them private.
- Actions (every POST under /api/) need the token when one is set: either the header
  `Authorization: Bearer TOKEN` (scripts), or the session cookie that `/login` sets after
  the token is typed in (the HTML buttons). The cookie holds an HMAC of the token, not the
  token; it is HttpOnly and SameSite=Strict, so no other site's page can send it.
- Every POST whose `Origin` (or `Sec-Fetch-Site`) says it comes from another site is
  refused, token or not: without a token, that is what keeps a web page you visit from
  pausing your Queues through your browser.

Framework-free: takes header values, returns decisions.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

COOKIE_NAME = "rota_dashboard"


def session_value(token: str) -> str:
    """The cookie value that stands for `token` (an HMAC, so the cookie is not the token)."""
    return hmac.new(token.encode(), b"rota-dashboard-session", hashlib.sha256).hexdigest()


def token_matches(token: str | None, *, authorization: str | None, cookie: str | None) -> bool:
    """Whether a request may act: True when no token is set, else when the bearer header
    or the session cookie matches it (constant-time comparisons)."""
    if token is None:
        return True
    if authorization:
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
                given.strip().encode(), token.encode()):
            return True
    return bool(cookie) and hmac.compare_digest(
        (cookie or "").encode(), session_value(token).encode())


def cross_site(*, origin: str | None, sec_fetch_site: str | None, host: str | None) -> bool:
    """Whether a POST comes from another site's page (then it is refused).

    Browsers send `Origin` with every POST; scripts (curl, requests) send none and are
    judged by the token alone.
    """
    if sec_fetch_site is not None and sec_fetch_site.lower() == "cross-site":
        return True
    if not origin:
        return False
    if origin == "null":
        return True
    return urlsplit(origin).netloc.lower() != (host or "").lower()


def safe_next(target: str | None, default: str) -> str:
    """A redirect target after a form post: a path on this site, never another site."""
    if not target or not target.startswith("/") or target.startswith("//") \
            or "\\" in target or any(ord(c) < 32 for c in target):
        return default
    return target
