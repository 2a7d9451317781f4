"""'When will it run?': an estimate of when a Worker Group starts a Queue's next due job.

Theory of operation: a job at `position` among its Queue's due jobs (0: it is next) starts
once the group has dispatched every job that its policy puts before it. How many that is
comes from replaying the policy with the simulator (`rota.core.simulation.simulate`, the
very planner the worker runs) over the current due backlogs of the group's Queues, with
the Queue's own backlog cut at the job itself and its pause and limit applied. Dividing
that count by the group's served rate (jobs per second, from the served history) gives
the estimate. It assumes no new jobs arrive and the rate holds: the basis says so.

Several groups serving one Queue drain it in parallel: `combine` adds their rates
(1 / sum(1 / seconds)).

Pure: no I/O, no clock. Imports only the core.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rota.core.policy import DispatchPolicy, Strict, Weighted
from rota.core.serving import entry_for
from rota.core.simulation import simulate

__all__ = ["MAX_REPLAYED_JOBS", "StartEstimate", "combine", "estimate_start"]

# The replay dispatches at most this many jobs; larger backlogs are scaled down to it (in
# proportion, the Queue's position too) and the count scaled back up, which keeps the
# shares and so the estimate while bounding the work of one page view.
MAX_REPLAYED_JOBS = 5_000


@dataclass(frozen=True, slots=True)
class StartEstimate:
    """When a group would start a Queue's job at `position` among its due jobs.

    Attributes:
        group: the Worker Group's name.
        queue: the Queue.
        position: due jobs of the Queue ahead of the job.
        ahead: jobs of the group (every Queue it serves) dispatched before the job, by the
            policy's replay; None when it would never start (paused, limit 0).
        rate_per_s: the group's served rate (jobs per second); None if unknown.
        seconds: `ahead / rate_per_s`; None when there is no estimate (see `basis`).
        basis: one sentence saying what the estimate rests on, for people.
        why: why there is no estimate, when there is none: "paused", "limit 0", or
            "history" (the group has no fully busy minute on record yet, so no rate to
            divide by that would not mislead); None when `seconds` is set.
    """

    group: str
    queue: str
    position: int
    ahead: int | None
    rate_per_s: float | None
    seconds: float | None
    basis: str
    why: str | None = None


def _describe(policy: DispatchPolicy) -> str:
    if isinstance(policy, Weighted):
        return "Weighted " + ":".join(str(weight) for _, weight in policy.weights)
    return "Strict " + " > ".join(policy.queues)


def _jobs_ahead(
    policy: DispatchPolicy, pool_size: int, backlog: Mapping[str, int], queue: str,
    position: int, paused: Iterable[str], limits: Mapping[str, int | None],
) -> int | None:
    """Jobs dispatched before the Queue's (position + 1)-th job, by replaying the policy."""
    wanted = position + 1
    backlogs = {q: max(0, backlog.get(q, 0)) for q in policy.queues}
    backlogs[queue] = wanted
    limit = limits.get(queue)
    per_pass = pool_size if limit is None else min(pool_size, limit)
    paused = [q for q in paused if q in backlogs]
    if per_pass <= 0 or queue in paused:
        return None
    # Every pass dispatches at least one job of the Queue until it is reached, and fills
    # the pool otherwise, so this many passes always reach the job.
    passes = math.ceil(sum(backlogs.values()) / pool_size) + math.ceil(wanted / per_pass) + 1
    replay = simulate(policy, pool_size, passes, backlogs, paused=paused,
                      limits={q: v for q, v in limits.items() if q in backlogs})
    before = 0
    seen = 0
    for one in replay.passes:
        for served in one.order:
            if served == queue:
                seen += 1
                if seen == wanted:
                    return before
            before += 1
    return None  # pragma: no cover - the pass count above always reaches it


def estimate_start(
    *,
    group: str,
    policy: DispatchPolicy,
    pool_size: int,
    backlog: Mapping[str, int],
    queue: str,
    position: int,
    rate_per_s: float | None,
    paused: Sequence[str] = (),
    limits: Mapping[str, int | None] | None = None,
    rate_note: str = "while busy",
    settled: bool = True,
) -> StartEstimate:
    """Estimate when `group` starts the job at `position` among `queue`'s due jobs.

    Args:
        backlog: due jobs per Queue the group serves (a Queue left out has none).
        position: due jobs of `queue` ahead of the job (its due backlog for a job enqueued
            now).
        rate_per_s: the group's served rate, all its Queues together; None if unknown.
        paused, limits: the Queues' controls, applied as the stores apply them.
        rate_note: how the rate was measured, for the basis (e.g. "over its 12 fully
            busy minutes").
        settled: whether the rate comes from fully busy minutes; a rate read over the
            parts of minutes a group has served so far is far too low, so there is then
            no estimate yet (`why` "history").

    Raises:
        ValueError: if the group does not serve `queue`, or for a negative position or a
            pool size below 1.
    """
    if entry_for(policy, queue) is None:
        raise ValueError(f"group {group!r} does not serve Queue {queue!r}")
    if position < 0:
        raise ValueError(f"position must be >= 0; got {position}")
    if pool_size < 1:
        raise ValueError(f"pool size must be at least 1; got {pool_size}")
    limits = dict(limits or {})
    how = f"{_describe(policy)}, pool {pool_size}"
    if queue in paused:
        return StartEstimate(group, queue, position, None, rate_per_s, None,
                             f"Queue {queue} is paused: nothing starts until it is resumed",
                             "paused")
    if limits.get(queue) == 0:
        return StartEstimate(group, queue, position, None, rate_per_s, None,
                             f"Queue {queue} has limit 0: nothing starts until it is raised",
                             "limit 0")
    total = sum(max(0, backlog.get(q, 0)) for q in policy.queues if q != queue) + position + 1
    scale = min(1.0, MAX_REPLAYED_JOBS / total)
    scaled = {q: math.ceil(max(0, backlog.get(q, 0)) * scale) for q in policy.queues}
    scaled_position = math.floor(position * scale)
    ahead = _jobs_ahead(policy, pool_size, scaled, queue, scaled_position, paused, limits)
    if ahead is not None and scale < 1.0:
        ahead = round(ahead / scale)
    replay = f"{ahead} job(s) of group {group} go before it ({how}, replayed over the due " \
        "backlogs" + (", scaled" if scale < 1.0 else "") + ")"
    if isinstance(policy, Strict) and policy.queues.index(queue) > 0:
        replay += "; Queues earlier in the Strict order go first, new jobs there delay it"
    if ahead is None:  # pragma: no cover - paused and limit 0 are handled above
        return StartEstimate(group, queue, position, None, rate_per_s, None, replay)
    if rate_per_s is None or rate_per_s <= 0:
        return StartEstimate(
            group, queue, position, ahead, None, None,
            f"{replay}; no served history for group {group} yet, so no rate to divide by",
            "history")
    if not settled and ahead > 0:
        return StartEstimate(
            group, queue, position, ahead, rate_per_s, None,
            f"{replay}; group {group} has no fully busy minute on record yet, and its rate "
            f"over the parts of minutes it served ({rate_per_s:.1f} job(s)/s) would put "
            f"the start far too late", "history")
    seconds = ahead / rate_per_s
    return StartEstimate(
        group, queue, position, ahead, rate_per_s, seconds,
        f"{position} due job(s) ahead in Queue {queue}; {replay}; group {group} served "
        f"{rate_per_s:.1f} job(s)/s {rate_note}; assumes no new jobs and the same rate")


def combine(estimates: Sequence[StartEstimate]) -> float | None:
    """Seconds until start when several groups serve the Queue (their rates add); None if
    no group has an estimate. A group whose estimate is 0 makes it 0."""
    known = [one.seconds for one in estimates if one.seconds is not None]
    if not known:
        return None
    if any(seconds <= 0 for seconds in known):
        return 0.0
    return 1.0 / sum(1.0 / seconds for seconds in known)
