"""The App's Worker Groups: their options, their runners, who is told of enqueues, and
their policies changed while workers run.

A group's options are kept in registration order. Its `GroupRunner` (rota.worker.group)
is made when the group first starts and kept for the App's life, so a group's dispatch
state (Weighted credits, the Queues it holds for empty) carries over from one drive to
the next. A group runs in one drive at a time (`running`): its dispatch state serves one
claimer. An enqueue through the App (`enqueued`) tells every runner (a Queue it held for
empty has work again) and every running runtime (its groups serving the Queue wake up).

A policy set here (`set_group_policy`: `App.set_group_policy`, the `rota policy` command
and the dashboard) is stored (`GroupPolicyStore`); every worker running the group follows
it at its next pass (rota.worker.policies), this App's own runners at once
(`WorkerGroups.policy_set`). The policy in force is the stored one a worker can use, else
the one in the code (`policy_in_force`, rota.core.serving's rule for one group).
Imports the core, the store contract and the worker's group runner.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime

from rota.core.group_policies import StoredPolicy, check_known_group
from rota.core.groups import WorkerGroupOptions, validate_group_name
from rota.core.jobs import JobRecord
from rota.core.policy import DispatchPolicy
from rota.core.retry import RetryPolicy
from rota.core.serving import PolicyInForce, in_force
from rota.core.workers import policy_parts
from rota.store.base import Store
from rota.worker.group import GroupRunner, Handler, new_worker_id, retry_policy


class WorkerGroups:
    """The Worker Groups of one App (see the module docstring)."""

    def __init__(self) -> None:
        self.options: list[WorkerGroupOptions] = []
        self.runners: dict[str, GroupRunner] = {}
        self._running: set[str] = set()  # groups a drive is running now (event loop only)
        # Replaced, never mutated, so enqueuing threads may iterate it without a lock.
        self._listeners: tuple[Callable[[str], None], ...] = ()
        self._policy_listeners: tuple[Callable[[], None], ...] = ()
        # The worker id of this App's inline drive (`run_until_idle`): the `worker` of the
        # jobs it runs, the same for every call (a real-time drive has its own).
        self.inline_worker_id = new_worker_id()

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
             if runner.serves(job.queue)),
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


def set_group_policy(store: Store, groups: WorkerGroups, group: str,
                     policy: DispatchPolicy | None, now: datetime, *,
                     force: bool = False) -> int:
    """Store `group`'s policy (None: clear it) and hand it to this App's runner of the
    group; the stored version. A group nobody knows is refused unless `force`."""
    validate_group_name(group)
    if not force:
        check_group_known(store, [o.name for o in groups.options], group, "force=True")
    version = store.set_group_policy(group, policy, now)  # checks it, as a start does
    row = None if policy is None else StoredPolicy(group, *policy_parts(policy), version, now)
    groups.policy_set(group, version, row)
    return version


def check_group_known(store: Store, defined: Iterable[str], group: str,
                      how_to_force: str) -> None:
    """Refuse `group` unless an App here defines it (`defined`), a worker registered it,
    or a policy is stored for it (set with force before its workers started: changing or
    clearing it needs no force again). Reads the registry and the group's one row only.

    Raises:
        ValueError: naming the known groups and `how_to_force`.
    """
    known = {*defined, *(info.name for info in store.worker_groups())}
    if group not in known and store.group_policy(group) is not None:
        return
    check_known_group(group, known, how_to_force)


def policy_in_force(store: Store, code: DispatchPolicy | None, group: str) -> PolicyInForce:
    """`group`'s policy in force: stored, else `code` (the App's; None if it defines no
    such group): rota.core.serving's rule, for one group.

    Raises:
        ValueError: if neither exists (the message says how to set one), or the group
            name is invalid.
    """
    validate_group_name(group)
    row = store.group_policy(group)
    found = in_force(code, row)
    if found is not None:
        return found
    if row is not None:
        row.policy()  # a row no worker can use, and no code: raises, saying why
    raise ValueError(
        f"no policy is stored for Worker Group {group!r}, and no App defines "
        "it here; store one with app.set_group_policy(group, policy) or "
        f"`rota policy {group} --weighted a=5,b=1`")
