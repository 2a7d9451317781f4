"""Policies and Queue=number pairs written as text: the one syntax of `rota simulate`,
`rota policy` and the dashboard's policy form.

`Q=W,...` is a Weighted policy (`a=6,b=3,c=1`), `Q1,Q2,...` a Strict one (highest
priority first); the same `Q=N` pairs give backlogs and limits. Parsing checks the syntax
only; a policy's values are checked where a group's start checks them (decision 0002).

Pure: imports the core's policy only.
"""

from __future__ import annotations

from rota.core.policy import DispatchPolicy, Strict, Weighted


def parse_pairs(text: str, what: str) -> list[tuple[str, int]]:
    """`a=6,b=3` as [("a", 6), ("b", 3)]; `what` names the input in errors.

    Raises:
        ValueError: for an item without `=`, an empty Queue or a number that is not an
            integer, naming it.
    """
    pairs: list[tuple[str, int]] = []
    for item in text.split(","):
        queue, sep, number = item.strip().partition("=")
        if not sep or not queue:
            raise ValueError(f"{what} takes Queue=number pairs like a=6,b=3; got {item!r}")
        try:
            pairs.append((queue, int(number)))
        except ValueError:
            raise ValueError(f"{what}: {number!r} (for Queue {queue!r}) is not an "
                             "integer") from None
    return pairs


def parse_policy(strict: str | None, weighted: str | None) -> DispatchPolicy:
    """The policy of `strict` (`Q1,Q2,...`) or else `weighted` (`Q=W,...`).

    Raises:
        ValueError: for a `weighted` text that is not Queue=number pairs.
    """
    if strict is not None:
        return Strict([q.strip() for q in strict.split(",") if q.strip()])
    if weighted is None:
        raise ValueError("give a Strict (Q1,Q2,...) or a Weighted (Q=W,...) policy")
    return Weighted(parse_pairs(weighted, "--weighted"))


def policy_text(policy: DispatchPolicy) -> str:
    """The text `parse_policy` reads back: `a=5,b=1` for Weighted, `a,b` for Strict."""
    if isinstance(policy, Weighted):
        return ",".join(f"{queue}={weight}" for queue, weight in policy.weights)
    return ",".join(policy.queues)
