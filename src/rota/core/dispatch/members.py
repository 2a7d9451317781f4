"""The Queues a group's policy serves now, when it names families: the members it knows.

A policy's families (rota.core.families) hold Queues no one lists: a member joins when a
wake-up hint names it (`hinted`, any thread) or when a survey of the store finds it with
due work (`join`). `expanded()` is the policy the dispatcher runs: every explicit Queue
and every known member, in tie-break order (entry position, then name), each member with
its family's weight. A group whose members grow switches its dispatcher to the new
expansion (rota.core.dispatch.switch): the Queues it knew keep their credits, a new
member starts at 0 as a Queue back from idle does, so the claims are those of the same
policy with its members listed explicitly.

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from rota.core.families import PolicyEntries
from rota.core.policy import DispatchPolicy, over_members


class Membership:
    """One group's policy as written, and the members of its families it knows."""

    def __init__(self, policy: DispatchPolicy, known: Iterable[str] = ()) -> None:
        self.policy = policy
        self.entries = PolicyEntries(policy.queues)
        self.members: set[str] = set()
        # Queues hinted since the last `take_joining` (any thread: deque appends are atomic).
        self._hinted: deque[str] = deque()
        self.join(known)

    @property
    def has_families(self) -> bool:
        return bool(self.entries.families)

    def hinted(self, queue: str) -> bool:
        """A wake-up hint named `queue`, which the dispatcher does not list: whether a
        family of the policy holds it (it then joins at the next `take_joining`)."""
        if (self.entries.families and queue not in self.members
                and self.entries.family_of(queue) is not None):
            self._hinted.append(queue)
            return True
        return False

    def join(self, queues: Iterable[str]) -> bool:
        """Make the Queues of `queues` that a family serves members; whether one was new."""
        before = len(self.members)
        for queue in queues:
            if queue not in self.members and self.entries.family_of(queue) is not None:
                self.members.add(queue)
        return len(self.members) > before

    def take_joining(self) -> bool:
        """The hinted Queues join; whether one was new."""
        hinted: list[str] = []
        while self._hinted:
            hinted.append(self._hinted.popleft())
        return self.join(hinted)

    def expanded(self) -> DispatchPolicy:
        """The policy over the Queues served now (the policy itself when it names no
        family). Not validated: the policy as written was."""
        return over_members(self.policy, self.members, self.entries)
