"""The App's Worker Groups: their options, their runners, and who is told of enqueues.

A group's options are kept in registration order. Its `GroupRunner` (rota.worker.group)
is made when the group first starts and kept for the App's life, so a group's dispatch
state (Weighted credits, the Queues it holds for empty) carries over from one drive to
the next. A group runs in one drive at a time (`running`): its dispatch state serves one
claimer. An enqueue through the App (`enqueued`) tells every runner (a Queue it held for
empty has work again) and every running runtime (its groups serving the Queue wake up).
A policy this App stores for one of its groups (`policy_set`) goes to that group's runner
at once, for its next pass.
Imports the core and the worker's group runner.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence

from rota.core.group_policies import StoredPolicy
from rota.core.groups import WorkerGroupOptions
from rota.core.jobs import JobRecord
from rota.core.policy import DispatchPolicy
from rota.core.retry import RetryPolicy
from rota.worker.group import GroupRunner, Handler, retry_policy


class WorkerGroups:
    """The Worker Groups of one App (see the module docstring)."""

    def __init__(self) -> None:
        self.options: list[WorkerGroupOptions] = []
        self.runners: dict[str, GroupRunner] = {}
        self._running: set[str] = set()  # groups a drive is running now (event loop only)
        # Replaced, never mutated, so enqueuing threads may iterate it without a lock.
        self._listeners: tuple[Callable[[str], None], ...] = ()
        self._policy_listeners: tuple[Callable[[], None], ...] = ()

    def add(self, options: WorkerGroupOptions) -> None:
        if not isinstance(options, WorkerGroupOptions):
            raise TypeError(f"add_worker_group takes rota.WorkerGroupOptions; got {options!r}")
        if any(existing.name == options.name for existing in self.options):
            raise ValueError(
                f"a Worker Group named {options.name!r} already exists; group names must be "
                "unique within an App"
            )
        self.options.append(options)

    def start(self, names: Iterable[str] | None = None) -> list[GroupRunner]:
        """The runners of the selected groups (default all), made on first use."""
        if not self.options:
            raise RuntimeError(
                "this App has no Worker Group; add one with app.add_worker_group("
                "rota.WorkerGroupOptions(name=..., policy=...))"
            )
        if isinstance(names, str):
            raise TypeError(f"groups must be a list of group names, not the str {names!r}")
        wanted = None if names is None else set(names)
        if wanted is not None and not wanted:
            raise ValueError("groups selects no Worker Group; pass None to run them all")
        selected = [o for o in self.options if wanted is None or o.name in wanted]
        if wanted is not None:
            missing = wanted - {o.name for o in self.options}
            if missing:
                known = ", ".join(o.name for o in self.options)
                raise ValueError(f"no Worker Group named {sorted(missing)}; this App has: {known}")
        runners: list[GroupRunner] = []
        for options in selected:
            runner = self.runners.get(options.name)
            if runner is None:
                runner = GroupRunner(options)
                self.runners[options.name] = runner
            runners.append(runner)
        return runners

    @contextlib.contextmanager
    def running(self, runners: Sequence[GroupRunner]) -> Iterator[None]:
        """Mark the groups of `runners` as running for the block: a group's dispatch
        state serves one drive at a time."""
        names = {runner.name for runner in runners}
        busy = names & self._running
        if busy:
            raise RuntimeError(
                f"Worker Group(s) {', '.join(sorted(busy))} are already running in this App "
                "(serve, run or run_until_idle); a group runs in one place at a time"
            )
        self._running |= names
        try:
            yield
        finally:
            self._running -= names

    def retry_policy_for(self, job: JobRecord, handler: Handler | None) -> RetryPolicy:
        """The RetryPolicy of an expired lease's job: its handler's, else that of the
        first started group serving its Queue, else the default."""
        group_policy = next(
            (runner.options.retry for runner in self.runners.values()
             if job.queue in runner.policy.queues),
            RetryPolicy(),
        )
        return retry_policy(handler, group_policy)

    @contextlib.contextmanager
    def listening(self, hint: Callable[[str], None]) -> Iterator[None]:
        """Call `hint(queue)` for every enqueue through the App while the block runs."""
        self._listeners = (*self._listeners, hint)
        try:
            yield
        finally:
            self._listeners = tuple(listener for listener in self._listeners
                                    if listener != hint)

    def code_policy(self, group: str) -> DispatchPolicy | None:
        """The policy `group` has in the code, or None if this App defines no such group."""
        return next((o.policy for o in self.options if o.name == group), None)

    @contextlib.contextmanager
    def following_policies(self, listener: Callable[[], None]) -> Iterator[None]:
        """Call `listener()` after this App offers a group a policy, while the block runs
        (a running runtime: its groups then wake and switch)."""
        self._policy_listeners = (*self._policy_listeners, listener)
        try:
            yield
        finally:
            self._policy_listeners = tuple(
                other for other in self._policy_listeners if other != listener)

    def policy_set(self, group: str, version: int, stored: StoredPolicy | None) -> None:
        """This App set `group`'s stored policy (None: cleared) at `version`: its own
        runner of the group switches at its next pass, without waiting to poll."""
        runner = self.runners.get(group)
        if runner is None:
            return
        runner.offer_policy(version, stored)
        for listener in self._policy_listeners:
            listener()

    def enqueued(self, queues: Iterable[str]) -> None:
        """Jobs were enqueued through the App: wake the running groups serving them, and
        have the groups that hold one of these Queues for empty probe it again."""
        listeners = self._listeners
        runners = self.runners.values()
        if listeners or runners:
            for queue in set(queues):
                for runner in runners:
                    runner.note_work(queue)
                for listener in listeners:
                    listener(queue)
