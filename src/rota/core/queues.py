"""Names: the one rule for what a valid Queue name, and Worker Group name, is.

Pure: no I/O. Used by policies (when a group starts), by enqueue (before anything is
stored) and by Worker Group options, so that a bad name is rejected in the same words
everywhere: a str of 1 to 200 characters, none of them whitespace or control characters;
a Queue name holds no `*` either (a name ending in `*` names a family: rota.core.families).
"""

from __future__ import annotations

DEFAULT_QUEUE = "default"
MAX_QUEUE_NAME_LENGTH = 200


def validate_queue_name(name: object) -> str:
    """Return `name` if it is a valid Queue name.

    Raises:
        TypeError: if `name` is not a str.
        ValueError: if it is empty, longer than 200 characters, or holds whitespace,
            control characters or a `*`.
    """
    # The common case in one pass of C: a printable name without a space is valid (every
    # whitespace character but the space is unprintable). A policy of 10,000 tenant Queues
    # is checked when its group starts, and every enqueue checks its Queue's name.
    if type(name) is str and 0 < len(name) <= MAX_QUEUE_NAME_LENGTH and (
            name.isprintable() and " " not in name and "*" not in name):
        return name
    checked = validate_name(name, "Queue")
    if "*" not in checked:  # (a str subclass, say)
        return checked
    raise ValueError(
        f"Queue name must not contain '*'; got {checked!r} (a name ending in '*' names a "
        "Queue family, which a policy takes: enqueue into one of its Queues, e.g. "
        "'tenant-1' for 'tenant-*')"
    )


def validate_name(name: object, what: str) -> str:
    """Return `name` if it is a valid name of a `what` ("Queue", "Worker Group"): the
    rule of the module docstring, its errors worded alike for both.

    Raises:
        TypeError: if `name` is not a str.
        ValueError: if it is empty, longer than 200 characters, or holds whitespace or
            control characters.
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a str; got {name!r} ({type(name).__name__})")
    if not name:
        raise ValueError(f"{what} name must be non-empty; got ''")
    if len(name) > MAX_QUEUE_NAME_LENGTH:
        raise ValueError(
            f"{what} name must be at most {MAX_QUEUE_NAME_LENGTH} characters; "
            f"got {len(name)} ({name[:20]!r}...)"
        )
    for char in name:
        if char.isspace() or not char.isprintable():
            raise ValueError(
                f"{what} name must not contain whitespace or control characters; got "
                f"{name!r} (use '-' or '_' instead)"
            )
    return name
