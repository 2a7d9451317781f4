"""The App's schedules: defining them (`App.schedule`) and firing them inline.

`AppSchedules` holds an App's schedules by name. `define` checks everything before it
keeps a schedule, in the order a user meets the mistakes: the name, the job (one of this
App's), the rule, the arguments (JSON, within the payload limit, fitting the handler),
a name already used, and a store that keeps no schedules; nothing is stored then
(rota.schedules builds the checked values). Workers fire schedules through their duty
(rota.worker.schedules, `duty`); `run_until_idle()` fires them inline (`fire_inline`),
registering each schedule in the store the first time it runs with it.
Imports the core, the store contract, the job definitions and the worker's schedule duty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rota.core.clock import Clock
from rota.core.durations import Duration
from rota.core.schedules import Schedule, validate_schedule_name
from rota.definition import JobDefinition
from rota.schedules import build_rule, build_schedule, check_arguments_fit
from rota.store.base import ScheduleStore, Store
from rota.worker.schedules import ScheduleDuty, fire_due_now


def schedule_store(store: Store) -> ScheduleStore:
    """`store` as a ScheduleStore, or a TypeError saying it keeps no schedules."""
    if not isinstance(store, ScheduleStore):
        raise TypeError(
            f"the store {store.url!r} does not keep schedules (it lacks "
            "register_schedules, fire_schedule and list_schedules); use a memory://, "
            "sqlite:/// or postgresql:// store"
        )
    return store


def scheduled_job(job: object, definitions: Mapping[str, JobDefinition[Any, Any]],
                  owner: object) -> JobDefinition[Any, Any]:
    """The definition `job` names (a definition or its name), if it is one of `owner`'s."""
    if isinstance(job, str):
        found = definitions.get(job)
        if found is None:
            raise ValueError(
                f"no job named {job!r} in this App; register it with @app.job first"
            )
        return found
    if isinstance(job, JobDefinition):
        if job.app is not owner or definitions.get(job.name) is not job:
            raise ValueError(
                f"job {job.name!r} belongs to another App; schedule this App's jobs"
            )
        return job
    raise TypeError(
        f"schedule() takes a job defined with @app.job (or its name); got {job!r}"
    )


class AppSchedules:
    """One App's schedules (see the module docstring)."""

    def __init__(self) -> None:
        self.by_name: dict[str, Schedule] = {}
        self._registered: set[str] = set()  # by run_until_idle (workers: the duty)

    def define(
        self, name: str, job: JobDefinition[Any, Any] | str, *, owner: object,
        definitions: Mapping[str, JobDefinition[Any, Any]], store: Store,
        max_payload_bytes: int, cron: str | None, every: Duration | None, timezone: str,
        args: Sequence[Any], kwargs: Mapping[str, Any] | None, queue: str | None,
    ) -> Schedule:
        """Check and keep a schedule (`App.schedule`, which documents the arguments)."""
        validate_schedule_name(name)
        definition = scheduled_job(job, definitions, owner)
        rule = build_rule(cron, every, timezone)
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        schedule = build_schedule(
            name, definition.name, definition.queue if queue is None else queue, rule,
            args, kwargs, max_payload_bytes,
        )
        if schedule.name in self.by_name:
            raise ValueError(
                f"a schedule named {schedule.name!r} already exists in this App; give each "
                "schedule its own name"
            )
        if isinstance(args, Sequence) and isinstance(kwargs, Mapping):
            check_arguments_fit(definition.func, definition.name, args, kwargs)
        schedule_store(store)  # a store without schedules fails here, not in a worker
        self.by_name[schedule.name] = schedule
        return schedule

    def duty(self, store: Store, clock: Clock) -> ScheduleDuty | None:
        """The duty that fires these schedules in a worker; None without schedules."""
        if not self.by_name:
            return None
        return ScheduleDuty(list(self.by_name.values()), schedule_store(store), clock)

    def fire_inline(self, store: Store, clock: Clock) -> Iterable[str]:
        """`run_until_idle`: register (each schedule once per App), then fire what is due
        at the clock's time. Returns the Queues of the jobs enqueued, due at their
        instants, so that the passes that follow run them."""
        if not self.by_name:
            return ()
        schedules_store = schedule_store(store)
        schedules = list(self.by_name.values())
        new = [s for s in schedules if s.name not in self._registered]
        if new:
            schedules_store.register_schedules([s.registration() for s in new], clock.now())
            self._registered.update(s.name for s in new)
        fired = fire_due_now(schedules_store, schedules, clock.now())
        return [s.queue for s, outcome in fired if outcome.fired]
