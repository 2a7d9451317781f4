"""Store URLs in messages never show a password, even when the URL is malformed."""

from __future__ import annotations

import pytest

import rota
from rota.store import StoreConfigError, mask_url


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://bob:s3cret@db:5432/jobs", "postgresql://bob:***@db:5432/jobs"),
        ("postgresql://bob:s3cret@[bad/db", "postgresql://bob:***@[bad/db"),
        ("postgresql://u:pa#secret@127.0.0.1:1/db", "postgresql://u:***@127.0.0.1:1/db"),
        ("postgresql://u:p@ss/w0rd@h/db", "postgresql://u:***@h/db"),
        ("postgresql://h:1/db?password=hunter2", "postgresql://h:1/db?password=***"),
        ("postgresql://h/db?sslmode=require&PASSWORD=x", "postgresql://h/db?sslmode=require&PASSWORD=***"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://h:5432/db", "postgresql://h:5432/db"),
        ("sqlite:///rota.db", "sqlite:///rota.db"),
    ],
)
def test_mask_url(url: str, masked: str) -> None:
    assert mask_url(url) == masked


@pytest.mark.parametrize(
    "url", ["postgresql://bob:s3cret@[bad/db", "postgresql://u:pa#s3cret@127.0.0.1:1/db"]
)
def test_a_malformed_postgres_url_error_names_the_url_masked_and_the_fix(url: str) -> None:
    with pytest.raises(StoreConfigError) as caught:
        rota.App(url)
    message = str(caught.value)
    assert "s3cret" not in message and "***" in message
    assert "percent-encode" in message and "postgresql://user:password@host" in message


@pytest.mark.parametrize("url", ["MEMORY://", "memory://", "memory:///"])
def test_memory_urls_are_case_insensitive(url: str) -> None:
    assert rota.App(url).store.url == "memory://"


@pytest.mark.parametrize("store", [None, 5, b"sqlite:///x.db"])
def test_app_takes_a_url_or_a_store_only(store: object) -> None:
    with pytest.raises(TypeError, match="App takes a store URL"):
        rota.App(store)  # type: ignore[arg-type]
