"""The one range of every numeric Queue and Worker Group setting.

A concurrency limit, a pool size and a claim cap are whole numbers no larger than
`MAX_SETTING` (2**31 - 1), the largest value of PostgreSQL's `integer` column that holds
them (`queue_settings.concurrency_limit`, the registry's `pool_size`). Checking here, before
any store, gives every store (memory, SQLite, PostgreSQL) and every caller (Python, the
`rota` command, the dashboard) the same `ValueError` naming the range, instead of an
`OverflowError` from SQLite or `NumericValueOutOfRange` from PostgreSQL.

Pure: imports nothing of rota.
"""

from __future__ import annotations

__all__ = ["MAX_SETTING", "checked_setting", "setting_range"]

MAX_SETTING = 2**31 - 1


def setting_range(minimum: int) -> str:
    """The range in words, as every message about it says it: `from 0 to 2147483647`."""
    return f"from {minimum} to {MAX_SETTING}"


def checked_setting(value: object, what: str, *, minimum: int, none: str = "") -> int:
    """Return `value` if it is an int from `minimum` to `MAX_SETTING`.

    Args:
        value: the setting as given.
        what: how the messages name it (`a Queue's limit`, `pool_size`).
        minimum: the smallest value allowed (0 or 1).
        none: when None is allowed too, what None means (`None for no limit`); the caller
            handles None itself, this only names it in the messages.

    Raises:
        TypeError: if it is not an int (a bool is not a number here).
        ValueError: if it is outside the range; the message names the range.
    """
    alternative = f", or {none}" if none else ""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{what} must be a whole number {setting_range(minimum)}{alternative}; got "
            f"{value!r} ({type(value).__name__})"
        )
    if not minimum <= value <= MAX_SETTING:
        raise ValueError(
            f"{what} must be a whole number {setting_range(minimum)}{alternative}; got {value}"
        )
    return value
