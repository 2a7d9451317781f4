"""Error text recorded with an outcome: something every store can save."""

from __future__ import annotations

from rota.core.outcomes import MAX_ERROR_LENGTH, describe_error


def test_error_text_with_nul_or_a_lone_surrogate_is_escaped() -> None:
    # PostgreSQL refuses NUL in text; no store can encode a lone surrogate as UTF-8
    text = describe_error(ValueError("a\x00b \udc80 [bold]é\n"))
    assert text == "ValueError: a\\x00b \\udc80 [bold]é\n"
    text.encode("utf-8")


def test_error_text_is_trimmed_and_plain_text_kept_as_it_is() -> None:
    assert describe_error(KeyError()) == "KeyError"
    assert describe_error(RuntimeError("日本 [x]")) == "RuntimeError: 日本 [x]"
    assert len(describe_error(RuntimeError("x" * 5000))) == MAX_ERROR_LENGTH
