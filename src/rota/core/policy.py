"""Dispatch Policies: the closed set of rules a Worker Group uses to pick its next Queue.

Owns `DispatchPolicy` and its two subtypes, `Strict` and `Weighted`. They are plain,
immutable, hashable values with value equality. Construction only checks types; the value
checks (at least one Queue, weights from 1 to 2**31 - 1, no Queue named twice, Queue
families as rota.core.families says) run when a Worker Group starts, through `validate()`,
as the specification requires. An entry is a Queue name or a family (`"tenant-*"`): the
policy keeps its entries as written; the Queues it serves are those entries hold.

The set is closed: after this module has defined `Strict` and `Weighted`, any attempt to
subclass `DispatchPolicy`, `Strict` or `Weighted` raises `TypeError` at class creation.

Pure: imports only the core (Queue names and families, the setting range) and does no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, NoReturn

from rota.core.families import PolicyEntries, validate_entry
from rota.core.settings_range import checked_setting

WEIGHTED_INVALID = "Weighted dispatch needs at least one queue, all weights >= 1."


class PolicyFault(ValueError):
    """What is at fault in an invalid policy: the `__cause__` of the ValueError that
    `validate()` raises when that error's message is exact by specification. A group
    that fails to start adds its own name to it (rota.worker.group)."""


def name_in_fault(error: ValueError, where: str) -> None:
    """Add `where` (the Worker Group) to the fault in `error`'s cause, in place; the
    message stays exact by specification."""
    fault = error.__cause__
    error.__cause__ = PolicyFault(f"{fault}, {where}" if isinstance(fault, PolicyFault)
                                  else where)
    error.__suppress_context__ = True
STRICT_EMPTY = "Strict dispatch needs at least one queue."

_sealed = False


class DispatchPolicy:
    """A Worker Group's rule for choosing which Queue to claim from next.

    There are exactly two: `DispatchPolicy.Strict` and `DispatchPolicy.Weighted`.
    Every policy exposes `queues`, the tuple of Queue names it serves in declaration order.
    """

    __slots__ = ()

    # Filled in below, once the subtypes exist.
    Strict: ClassVar[type[Strict]]
    Weighted: ClassVar[type[Weighted]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if _sealed:
            raise TypeError(
                f"cannot subclass {cls.__mro__[1].__name__}: DispatchPolicy is closed; "
                "use DispatchPolicy.Strict or DispatchPolicy.Weighted"
            )
        super().__init_subclass__(**kwargs)

    def __new__(cls, *args: Any, **kwargs: Any) -> DispatchPolicy:
        if cls is DispatchPolicy:
            raise TypeError(
                "DispatchPolicy is abstract; construct DispatchPolicy.Strict or "
                "DispatchPolicy.Weighted"
            )
        return super().__new__(cls)

    @property
    def queues(self) -> tuple[str, ...]:
        raise NotImplementedError  # pragma: no cover - both subtypes override it

    def validate(self) -> None:
        """Check the policy's values; called when a Worker Group starts.

        Raises:
            ValueError: with a message that names the problem.
        """
        raise NotImplementedError  # pragma: no cover

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable")


def _check_queue_type(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"Queue names must be str; got {name!r} ({type(name).__name__})")
    return name


class Strict(DispatchPolicy):
    """Serve Queues in a fixed priority order, highest priority first.

    An earlier Queue is always tried before a later one; a later Queue is reached only when
    every earlier Queue has no due work. A busy head can starve the tail: that is the
    accepted trade-off of strict priority.

    `Strict("critical", "bulk")` and `Strict(["critical", "bulk"])` are equal. A family
    (`Strict("urgent-*", "bulk")`) serves its Queues at its place, in name order.
    """

    __slots__ = ("_queues",)
    _queues: tuple[str, ...]

    def __init__(self, *queues: str | Iterable[str]) -> None:
        names: tuple[object, ...]
        if len(queues) == 1 and not isinstance(queues[0], str):
            if not isinstance(queues[0], Iterable):
                raise TypeError(
                    f"Strict takes Queue names, or one list of them; got {queues[0]!r}"
                )
            names = tuple(queues[0])
        else:
            names = queues
        object.__setattr__(self, "_queues", tuple(_check_queue_type(q) for q in names))

    @property
    def queues(self) -> tuple[str, ...]:
        return self._queues

    def validate(self) -> None:
        if not self._queues:
            raise ValueError(STRICT_EMPTY)
        for queue in self._queues:
            validate_entry(queue)
        PolicyEntries(self._queues).check()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Strict):
            return NotImplemented
        return self._queues == other._queues

    def __hash__(self) -> int:
        return hash((Strict, self._queues))

    def __repr__(self) -> str:
        return f"DispatchPolicy.Strict({', '.join(map(repr, self._queues))})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Strict, self._queues)


class Weighted(DispatchPolicy):
    """Share claims across Queues in proportion to integer weights (smooth weighted
    round-robin, ties to the earlier-declared Queue).

    Takes exactly one sequence of `(queue, weight)` pairs:
    `Weighted([("a", 6), ("b", 3), ("c", 1)])`. `queues` is derived in declaration order.
    A family's entry (`("tenant-*", 1)`) gives each of its Queues that weight, as its own
    Queue with its own credit.
    """

    __slots__ = ("_queues", "_weights")
    _weights: tuple[tuple[str, int], ...]
    _queues: tuple[str, ...]

    def __init__(self, weights: Iterable[tuple[str, int]], /) -> None:
        if isinstance(weights, str | bytes) or not isinstance(weights, Iterable):
            raise TypeError(
                "Weighted takes one sequence of (queue, weight) pairs, "
                f"e.g. Weighted([('a', 6), ('b', 3)]); got {weights!r}"
            )
        if isinstance(weights, Mapping):
            raise TypeError(
                "Weighted takes a sequence of (queue, weight) pairs, not a mapping; "
                "pass list(weights.items()) to keep the declaration order explicit"
            )
        pairs: list[tuple[str, int]] = []
        for pair in weights:
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(
                    f"each Weighted entry must be a (queue, weight) pair; got {pair!r}"
                )
            queue, weight = pair
            _check_queue_type(queue)
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise TypeError(
                    f"the weight of Queue {queue!r} must be an int; got {weight!r}"
                )
            pairs.append((queue, weight))
        object.__setattr__(self, "_weights", tuple(pairs))
        object.__setattr__(self, "_queues", tuple(queue for queue, _ in pairs))

    @property
    def weights(self) -> tuple[tuple[str, int], ...]:
        """The `(queue, weight)` pairs in declaration order."""
        return self._weights

    @property
    def queues(self) -> tuple[str, ...]:
        return self._queues

    def validate(self) -> None:
        if not self._weights or any(weight < 1 for _, weight in self._weights):
            # The message is exact by specification, so what is at fault goes in the
            # exception's cause (printed above it in a traceback, and under it by
            # `rota worker`), not in the message nor in a note: pytest's `match=` reads
            # notes too, so a note would break `match=r"...>= 1\.$"`.
            if not self._weights:
                fault = "Weighted([]) names no Queue; give at least one (queue, weight) pair"
            else:
                fault = "; ".join(
                    f"Queue {queue!r} has weight {weight}" for queue, weight in self._weights
                    if weight < 1
                ) + " (weights must be whole numbers >= 1)"
            raise ValueError(WEIGHTED_INVALID) from PolicyFault(fault)
        for queue, weight in self._weights:
            # The top of every numeric setting's range (rota.core.settings_range): the
            # stores, the CLI and the dashboard then all refuse 10**26 alike.
            checked_setting(weight, f"the weight of Queue {queue!r}", minimum=1)
        for queue in self.queues:
            validate_entry(queue)
        PolicyEntries(self.queues).check()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Weighted):
            return NotImplemented
        return self._weights == other._weights

    def __hash__(self) -> int:
        return hash((Weighted, self._weights))

    def __repr__(self) -> str:
        return f"DispatchPolicy.Weighted({list(self._weights)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Weighted, (self._weights,))


def over_members(policy: DispatchPolicy, members: Iterable[str],
                 entries: PolicyEntries | None = None) -> DispatchPolicy:
    """`policy` over the Queues it serves, its families' members taken from `members`: the
    same kind of policy listing them in tie-break order (rota.core.families), each member
    with its family's weight; `policy` itself when it names no family. Not validated (it
    may list no Queue yet): `policy` is. `entries`: `policy`'s, if the caller has them."""
    entries = entries or PolicyEntries(policy.queues)
    if not entries.families:
        return policy
    served = entries.expand(members)
    if isinstance(policy, Weighted):
        weights = [weight for _, weight in policy.weights]
        return Weighted([(queue, weights[index]) for queue, index in served])
    return Strict(*(queue for queue, _ in served))


def served_queues(policy: DispatchPolicy, members: Iterable[str]) -> list[tuple[str, int | None]]:
    """The Queues `policy` serves, its families' members taken from `members`, each with
    its weight (None under Strict), in tie-break order (`App.served_queues`)."""
    expanded = over_members(policy, members)
    if isinstance(expanded, Weighted):
        return list(expanded.weights)
    return [(queue, None) for queue in expanded.queues]


DispatchPolicy.Strict = Strict
DispatchPolicy.Weighted = Weighted
_sealed = True
