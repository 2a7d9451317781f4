"""Queue families: a name that ends in `*` names every Queue whose name starts with what
comes before the `*` (`"tenant-*"` holds `tenant-1`, `tenant-acme`; `"*"` holds every
Queue). The pure rules, in one place:

- what a policy entry may be (`validate_entry`): a Queue name, which never holds `*`, or
  a family, whose prefix holds none;
- which entry of a policy serves a Queue (`PolicyEntries.entry_of`): the first that holds
  it, so overrides come first; an entry that an earlier one already holds entirely (a
  Queue after a family holding it, `"tenant-vip-*"` after `"tenant-*"`, a Queue named
  twice) is refused (`PolicyEntries.check`);
- the Queues a policy serves, given the members the caller knows (`PolicyEntries.expand`):
  in tie-break order, the entry's position, then member names in code point order.

Pure: no I/O, no clock, no asyncio.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rota.core.queues import validate_name, validate_queue_name

FAMILY_MARK = "*"


def is_family(name: str) -> bool:
    """Whether `name` names a family (it ends in `*`)."""
    return name.endswith(FAMILY_MARK)


def family_prefix(family: str) -> str:
    """What a member's name starts with: the family's name without its `*`."""
    return family[:-1]


def validate_entry(name: object) -> str:
    """Return `name` if it is a valid policy entry: a Queue name, or a family.

    Raises:
        TypeError: if `name` is not a str.
        ValueError: if it is no valid Queue name, or a family whose prefix holds a `*` or
            whitespace (`"a*b"`, `"t*-*"`, `"**"`).
    """
    if isinstance(name, str) and is_family(name):
        prefix = family_prefix(name)
        if FAMILY_MARK in prefix:
            raise ValueError(
                f"{name!r} is no Queue family: a family is a name prefix and one '*' at its "
                "end (e.g. 'tenant-*'); '*' may appear nowhere else"
            )
        if prefix:
            validate_name(prefix, "Queue family prefix")
        return name
    return validate_queue_name(name)


def holds(entry: str, queue: str) -> bool:
    """Whether the policy entry `entry` (a Queue name or a family) holds Queue `queue`."""
    if is_family(entry):
        return queue.startswith(family_prefix(entry))
    return entry == queue


class PolicyEntries:
    """The entries of one policy, as written (Queue names and families), indexed for the
    question "which entry serves this Queue" (module docstring)."""

    def __init__(self, entries: Sequence[str]) -> None:
        self.entries = tuple(entries)
        self._explicit: dict[str, int] = {}
        for index, name in enumerate(self.entries):
            if not is_family(name):
                self._explicit.setdefault(name, index)
        self.families = tuple((index, family_prefix(name))
                              for index, name in enumerate(self.entries) if is_family(name))

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The prefixes of the policy's families, in entry order."""
        return tuple(prefix for _, prefix in self.families)

    def entry_of(self, queue: str) -> int | None:
        """The position of the entry that serves `queue`, or None if none holds it."""
        explicit = self._explicit.get(queue)
        for index, prefix in self.families:
            if explicit is not None and explicit < index:
                break
            if queue.startswith(prefix):
                return index
        return explicit

    def family_of(self, queue: str) -> int | None:
        """The position of the family entry that serves `queue`, or None if none does (an
        explicit entry serves it, or no entry holds it)."""
        index = self.entry_of(queue)
        return None if index is None or index == self._explicit.get(queue) else index

    def check(self) -> None:
        """Refuse an entry that an earlier one holds entirely.

        Raises:
            ValueError: naming both entries (a Queue named twice: its exact words).
        """
        seen: set[str] = set()
        families: list[str] = []
        for name in self.entries:
            if name in seen:
                raise ValueError(
                    f"Queue {name!r} is named twice in one policy; list each Queue once")
            seen.add(name)
            prefix = family_prefix(name) if is_family(name) else name
            earlier = next((family for family in families
                            if prefix.startswith(family_prefix(family))), None)
            if earlier is not None:
                raise ValueError(
                    f"{name!r} comes after {earlier!r}, which already holds every Queue it "
                    f"names, so it would serve none; list {name!r} first to override "
                    f"{earlier!r}, or drop it"
                )
            if is_family(name):
                families.append(name)

    def expand(self, members: Iterable[str]) -> list[tuple[str, int]]:
        """The Queues the policy serves, each with the position of its entry, in tie-break
        order: every explicit Queue, and each of `members` that a family serves (one
        that no entry holds is left out)."""
        served: list[tuple[int, str]] = [(index, name) for name, index in
                                         self._explicit.items()]
        for member in set(members):
            if member in self._explicit:
                continue
            index = self.entry_of(member)
            if index is not None:
                served.append((index, member))
        served.sort()
        return [(queue, index) for index, queue in served]
