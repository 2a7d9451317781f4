"""What the dashboard shows, as plain JSON-ready data: one function per page or endpoint.

The HTML pages and the `/api/` endpoints render the same dicts, so the JSON holds
everything a page shows. No web framework here: these functions take a store (and the
facts of `sources.py`) and return data, so they are tested without a server.

Imports rota's public API, the store contract and the pure core only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rota import ScheduleInfo
from rota.core.durations import short_duration
from rota.core.estimate import StartEstimate, combine, estimate_start
from rota.core.families import PolicyEntries, holds, is_family
from rota.core.jobs import JobRecord, JobState
from rota.core.policy import DispatchPolicy, Strict, Weighted, over_members
from rota.core.policy_text import policy_text as policy_input
from rota.core.progress import Progress, attempt_error_fields, progress_fields, progress_text
from rota.core.queue_controls import QueueInfo, held_back_reason
from rota.core.rates import QueueRate, describe_period
from rota.core.serving import ServingIndex, serving_groups
from rota.core.workers import (
    RunningJob,
    ServedCount,
    WorkerInfo,
    minute_of,
    running_to_json,
)
from rota.dashboard.sources import GroupObservation, policies
from rota.store import Store, related, relative_json

JSON = dict[str, Any]


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def duration(seconds: float) -> str:
    """'N s' for people (with minutes or hours beside it when long)."""
    whole = max(0, round(seconds))
    if whole < 120:
        return f"{whole} s"
    if whole < 7200:
        return f"{whole} s ({whole // 60} min)"
    return f"{whole} s ({whole / 3600:.1f} h)"


def about(seconds: float | None) -> str:
    """'about N s', or 'unknown'."""
    return "unknown" if seconds is None else f"about {duration(seconds)}"


def policy_json(policy: DispatchPolicy) -> JSON:
    if isinstance(policy, Weighted):
        return {"kind": "weighted",
                "queues": [{"queue": q, "weight": w} for q, w in policy.weights]}
    assert isinstance(policy, Strict)
    return {"kind": "strict", "queues": [{"queue": q, "weight": None} for q in policy.queues]}


def policy_text(policy: DispatchPolicy) -> str:
    if isinstance(policy, Weighted):
        return "Weighted " + ", ".join(f"{q}={w}" for q, w in policy.weights)
    return "Strict " + " > ".join(policy.queues)


# -- Queues ---------------------------------------------------------------------------------


def estimates_for(
    info: QueueInfo, infos: Sequence[QueueInfo], groups: Sequence[GroupObservation],
    position: int | None = None, known: ServingIndex | None = None,
) -> list[StartEstimate]:
    """Each group's estimate for a job of `info`'s Queue at `position` among its due jobs
    (default: after all of them, a job enqueued now); `known`: the policies of `groups`,
    indexed (`policies(groups, live=False)`), when the caller asks for many Queues."""
    by_name = {one.name: one for one in infos if one.members is None}
    estimates: list[StartEstimate] = []
    if known is None:
        known = ServingIndex(policies(groups, live=False))
    serving = serving_groups(info.name, known)
    for group in groups:
        if group.name not in serving or group.policy is None or group.pool_size < 1:
            continue
        # A family replays as the Queues it holds (their backlogs), each with its weight.
        policy = over_members(group.policy, by_name)
        backlog = {q: by_name[q].due for q in policy.queues if q in by_name}
        paused = [q for q in policy.queues if q in by_name and by_name[q].paused]
        limits = {q: by_name[q].limit for q in policy.queues
                  if q in by_name and by_name[q].limit is not None}
        estimates.append(estimate_start(
            group=group.name, policy=policy, pool_size=group.pool_size,
            backlog=backlog, queue=info.name,
            position=info.due if position is None else position,
            rate_per_s=group.rate_per_s, paused=paused, limits=limits,
            rate_note=group.rate_note, settled=group.full_minutes > 0,
        ))
    return estimates


def has_free_worker(group: GroupObservation) -> bool:
    """Whether a live worker of `group` has a Worker free now."""
    return group.workers > 0 and group.in_flight < group.pool_size * group.workers


# Why no estimate, for people: what follows "starts" on a page (a number reads "in about").
_NO_ESTIMATE = {
    "paused": "when the Queue is resumed (it is paused)",
    "limit 0": "when its limit is raised (it is 0)",
    "history": "when its turn comes: not enough history yet to say how soon",
}


def estimate_json(estimates: Sequence[StartEstimate],
                  groups: Sequence[GroupObservation] = ()) -> JSON:
    """The estimates of the groups serving a Queue, together. `text` follows "starts" on
    a page: "in about 5 s", "at once: a Worker is free" (nothing ahead of it and a live
    worker of its group has a Worker free), or why there is no number."""
    free = {group.name for group in groups if has_free_worker(group)}
    if any(one.ahead == 0 and one.group in free for one in estimates):
        return {"seconds": 0.0, "text": "at once: a Worker is free",
                "basis": "nothing of its group goes before it, and a Worker of "
                + ", ".join(sorted({one.group for one in estimates
                                    if one.ahead == 0 and one.group in free}))
                + " is free now",
                "groups": [_group_estimate(one) for one in estimates]}
    seconds = combine(estimates)
    if not estimates:
        basis = "no Worker Group known to serve this Queue (start a worker, or pass --app)"
    elif seconds is None:
        basis = "; ".join(one.basis for one in estimates)
    elif len(estimates) == 1:
        basis = estimates[0].basis
    else:
        basis = "groups together (their rates add): " + "; ".join(
            f"{one.group}: {about(one.seconds)}" for one in estimates)
    return {"seconds": seconds, "text": _text(seconds, estimates), "basis": basis,
            "groups": [_group_estimate(one) for one in estimates]}


def _text(seconds: float | None, estimates: Sequence[StartEstimate]) -> str:
    if seconds is not None:
        return "in " + about(seconds)
    if not estimates:
        return "when a worker serving it runs: none does now"
    reasons = {one.why for one in estimates}
    reason = reasons.pop() if len(reasons) == 1 else "history"
    return _NO_ESTIMATE.get(reason or "history", _NO_ESTIMATE["history"])


def _group_estimate(one: StartEstimate) -> JSON:
    return {"group": one.group, "position": one.position, "ahead": one.ahead,
            "rate_per_s": one.rate_per_s, "seconds": one.seconds,
            "text": _text(one.seconds, [one]), "basis": one.basis, "why": one.why}


def queue_json(
    info: QueueInfo, now: datetime, infos: Sequence[QueueInfo],
    groups: Sequence[GroupObservation],
    indexes: tuple[ServingIndex, ServingIndex] | None = None, *,
    estimate: bool = True, paused: Sequence[str] | None = None,
) -> JSON:
    """One Queue; `indexes`: the live and the known groups' policies, indexed (`serving`),
    when the caller shows many Queues. Without `estimate` it has none: each replays the
    policies over every Queue, so a family row's thousands of members leave it to their
    own pages. `paused`: `paused_families(infos)`, when the caller has it."""
    age = None if info.oldest_due_at is None else \
        max(0.0, (now - info.oldest_due_at).total_seconds())
    live, known = indexes or serving(groups)
    # Who serves it now: the groups live workers run, under their policies in force.
    serving_now = serving_groups(info.name, live)
    return {
        "name": info.name, "paused": info.paused,
        "paused_by": paused_by(info, paused_families(infos) if paused is None else paused)
        if info.paused else None,
        "limit": info.limit,
        "rate": rate_json(info.rate),
        "counts": {state.value: info.counts.get(state, 0) for state in JobState},
        "due": info.due, "oldest_due_at": _time(info.oldest_due_at),
        "oldest_due_age_s": age,
        "groups": sorted(serving_now),
        "weights": serving_now,
        "unserved": info.due > 0 and not serving_now,
        **({"estimate": estimate_json(estimates_for(info, infos, groups, known=known),
                                      groups)} if estimate else {}),
    }


def paused_families(infos: Iterable[QueueInfo]) -> list[str]:
    """The families of `infos` (their entries of `queue_infos`) that are paused."""
    return [one.name for one in infos if one.members is not None and one.paused]


def paused_by(info: QueueInfo, paused: Sequence[str]) -> str | None:
    """The family of `paused` (`paused_families`) that holds `info`'s Queue (the longest,
    if several), or None: resuming the Queue itself would not resume it then, so its page
    offers no resume."""
    if info.members is not None or info.family is None:
        return None  # no family's settings apply to it
    return max((name for name in paused if holds(name, info.name)), key=len, default=None)


def rate_json(rate: QueueRate | None) -> JSON | None:
    """A rate as the pages show it (`text`) and as its form takes it back (`input`)."""
    if rate is None:
        return None
    return {"jobs": rate.jobs, "per_s": rate.per.total_seconds(), "burst": rate.burst,
            "text": str(rate), "input": f"{rate.jobs}/{describe_period(rate.per)}"}


def serving(groups: Sequence[GroupObservation]) -> tuple[ServingIndex, ServingIndex]:
    """The policies in force of the groups live workers run (who serves a Queue now), and
    of every group known (the start estimates), indexed."""
    return (ServingIndex(policies(groups, live=True)),
            ServingIndex(policies(groups, live=False)))


def queues_json(
    infos: Sequence[QueueInfo], now: datetime, groups: Sequence[GroupObservation],
) -> list[JSON]:
    """The rows of the Queues page, by name: a Queue's (`kind` "queue", `queue_json`), or
    a family's with its members inside (`kind` "family", `family_json`; `queue_rows`
    says which Queues a family row holds)."""
    indexes = serving(groups)
    paused = paused_families(infos)
    return [row_json(row, now, infos, groups, indexes, paused)
            for row in queue_rows(infos, policies_by_preference(groups))]


def row_json(row: QueueRow, now: datetime, infos: Sequence[QueueInfo],
             groups: Sequence[GroupObservation],
             indexes: tuple[ServingIndex, ServingIndex], paused: Sequence[str]) -> JSON:
    """One row of `queues_json` (`paused`: `paused_families(infos)`)."""
    if row.members is None:
        assert row.info is not None
        return {"kind": "queue", **queue_json(row.info, now, infos, groups, indexes,
                                              paused=paused)}
    return family_json(row, now, infos, groups, indexes)


# -- Queue families: one row for the Queues a family holds -------------------------------


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One row of the Queues page: a Queue (`info` its QueueInfo, `members` None), or a
    family (`name` ends in `*`; `info` the family's own entry of `queue_infos` when it has
    settings, else None; `members` the Queues shown under it, by backlog)."""

    name: str
    info: QueueInfo | None
    members: tuple[QueueInfo, ...] | None = None


def policies_by_preference(groups: Sequence[GroupObservation]) -> list[DispatchPolicy]:
    """The policies in force that decide which family row a Queue shows under: those of
    the groups live workers run first (who serves it now), then every other group known
    (so the rows stay put while no worker runs)."""
    live = policies(groups, live=True)
    known = policies(groups, live=False)
    return [*live.values(), *(policy for name, policy in known.items() if name not in live)]


def family_of_queues(infos: Iterable[QueueInfo],
                     policies: Sequence[DispatchPolicy]) -> dict[str, str]:
    """Queue -> the family whose row shows it, for each Queue that has one. The first of
    `policies` with an entry that serves the Queue decides: a family entry puts it in that
    family's row; its own name (an override, with a weight of its own) gives it a row of
    its own. A Queue no policy serves shows under the family whose settings apply to it
    (`QueueInfo.family`), if any. A family's own entry is no Queue."""
    indexed = [(policy, PolicyEntries(policy.queues)) for policy in policies]
    found: dict[str, str] = {}
    for info in infos:
        if info.members is not None:
            continue
        family = info.family
        for policy, entries in indexed:
            index = entries.entry_of(info.name)
            if index is not None:
                name = policy.queues[index]
                family = name if is_family(name) else None
                break
        if family is not None:
            found[info.name] = family
    return found


def by_backlog(members: Iterable[QueueInfo]) -> tuple[QueueInfo, ...]:
    """Members in the order a family row lists them: the most due jobs first, ties by
    name (so the Queues holding the family back are on top)."""
    return tuple(sorted(members, key=lambda info: (-info.due, info.name)))


def queue_rows(infos: Sequence[QueueInfo],
               policies: Sequence[DispatchPolicy]) -> list[QueueRow]:
    """The rows of the Queues page, by name: one per Queue that belongs to no family
    (`family_of_queues`), and one per family that holds Queues or has settings of its own,
    its members sorted `by_backlog`. A family's entry of `queue_infos` never shows as a
    Queue, and each Queue shows once: in its row, or under its family."""
    families = family_of_queues(infos, policies)
    settings = {info.name: info for info in infos if info.members is not None}
    members: dict[str, list[QueueInfo]] = {name: [] for name in settings}
    rows: list[QueueRow] = []
    for info in infos:
        if info.members is not None:
            continue
        family = families.get(info.name)
        if family is None:
            rows.append(QueueRow(info.name, info))
        else:
            members.setdefault(family, []).append(info)
    rows += [QueueRow(name, settings.get(name), by_backlog(held))
             for name, held in members.items()]
    rows.sort(key=lambda row: row.name)
    return rows


def summed(members: Sequence[QueueInfo]) -> tuple[dict[JobState, int], int, datetime | None]:
    """A family row's jobs per state, due jobs and oldest due time: its members', added
    (each Queue is in one row only, so the page's totals count each job once)."""
    counts = {state: sum(info.counts.get(state, 0) for info in members) for state in JobState}
    oldest = min((info.oldest_due_at for info in members if info.oldest_due_at is not None),
                 default=None)
    return counts, sum(info.due for info in members), oldest


def member_shares(queue: str, groups: Sequence[GroupObservation],
                  weights: Mapping[str, int | None]) -> list[JSON]:
    """Per group serving `queue` now (`weights`: group -> its weight) or that served it in
    the window: its weight, the jobs of `queue` it served, and their share of all it
    served (the fairness view's `served_share`)."""
    shares = []
    for group in groups:
        served = group.served.get(queue, 0)
        if group.name not in weights and not served:
            continue
        total = group.served_total
        shares.append({"group": group.name, "weight": weights.get(group.name),
                       "served": served, "served_share": served / total if total else None})
    return shares


def family_json(row: QueueRow, now: datetime, infos: Sequence[QueueInfo],
                groups: Sequence[GroupObservation],
                indexes: tuple[ServingIndex, ServingIndex] | None = None) -> JSON:
    """A family's row: its own settings (those of its entry of `queue_infos`, if it has
    one), its members' jobs added up, who serves them, and its members, by backlog, each
    a `queue_json` with its weight and share served per group and what holds it back."""
    indexes = indexes or serving(groups)
    held = row.members or ()
    counts, due, oldest = summed(held)
    own = row.info
    members = []
    paused = paused_families(infos)
    for info in held:
        member = queue_json(info, now, infos, groups, indexes, estimate=False, paused=paused)
        members.append({"kind": "queue", **member, "held_back": held_back_reason(info),
                        "shares": member_shares(info.name, groups, member["weights"])})
    serving_now = sorted({group for member in members for group in member["groups"]})
    return {
        "kind": "family", "name": row.name, "settings": own is not None,
        "paused": own is not None and own.paused, "limit": None if own is None else own.limit,
        "rate": rate_json(None if own is None else own.rate),
        "counts": {state.value: count for state, count in counts.items()},
        "due": due, "oldest_due_at": _time(oldest),
        "oldest_due_age_s": None if oldest is None else
        max(0.0, (now - oldest).total_seconds()),
        "groups": serving_now,
        "weights": family_weights(row.name, groups),
        "unserved": any(member["unserved"] for member in members),
        "member_count": len(members),
        # How many Queues the store knows that it holds (some may show under another
        # family, whose policy entry serves them).
        "holds": len(members) if own is None or own.members is None else own.members,
        "members": members,
    }


def family_weights(family: str, groups: Sequence[GroupObservation]) -> dict[str, int | None]:
    """Group -> the weight of `family`'s own entry in its policy in force (None under
    Strict), for each group live workers run whose policy names the family."""
    found: dict[str, int | None] = {}
    for group, policy in policies(groups, live=True).items():
        if family in policy.queues:
            found[group] = dict(policy.weights).get(family) \
                if isinstance(policy, Weighted) else None
    return found


def row_for(name: str, infos: Sequence[QueueInfo],
            groups: Sequence[GroupObservation]) -> QueueRow:
    """The row of one name: a family's (its members as the Queues page shows them), or a
    Queue's (a Queue with no jobs and no settings: empty)."""
    if is_family(name):
        found = next((row for row in queue_rows(infos, policies_by_preference(groups))
                      if row.name == name), None)
        info = next((one for one in infos if one.name == name), None)
        return found or QueueRow(name, info, ())
    info = next((one for one in infos if one.name == name), None)
    return QueueRow(name, info or QueueInfo(name, counts=dict.fromkeys(JobState, 0)))


# -- Worker Groups (the fairness view) ----------------------------------------------------------


def group_json(group: GroupObservation, infos: Sequence[QueueInfo], now: datetime) -> JSON:
    """One group of the fairness view. Its policy is the one in force (`group.stored`,
    the row `App.set_group_policy` wrote, if a worker can use it, else the code's as a
    worker registered it or `--app` defines it); when that stored policy was set within
    the window, the shares count from its minute on (`policy_changed_at`)."""
    by_name = {one.name: one for one in infos}
    policy = group.policy
    stored = group.stored
    source = None if policy is None else "code" if stored is None else "stored"
    total_weight = sum(w for _, w in policy.weights) if isinstance(policy, Weighted) else 0
    weights = dict(policy.weights) if isinstance(policy, Weighted) else {}
    served_total = group.served_total
    queues: list[JSON] = []
    order = list(policy.queues) if policy is not None else []
    order += sorted(queue for queue in group.served if queue not in order)
    entries = PolicyEntries(policy.queues) if policy is not None else None
    for index, queue in enumerate(order):
        info = by_name.get(queue)
        if is_family(queue) and entries is not None:
            info = family_entry(queue, info, [
                one for one in infos
                if one.members is None and entries.entry_of(one.name) == index])
        waited = None if info is None or info.oldest_due_at is None else \
            max(0.0, (now - info.oldest_due_at).total_seconds())
        served = group.served.get(queue, 0)
        queues.append({
            "queue": queue,
            "weight": weights.get(queue),
            "order": index + 1,
            "target_share": weights[queue] / total_weight if queue in weights else None,
            "served": served,
            "served_share": served / served_total if served_total else None,
            "due": 0 if info is None else info.due,
            "paused": False if info is None else info.paused,
            "longest_wait_s": waited,
            "held_back": held_back_reason(info) if info is None or info.members is None
            else family_held_back(info),
        })
    capacity = group.pool_size * group.workers
    return {
        "name": group.name,
        "policy": None if policy is None else policy_json(policy),
        "policy_text": "policy unknown" if policy is None else policy_text(policy),
        "policy_source": source,
        "policy_version": None if stored is None else stored.version,
        "policy_set_at": None if stored is None else stored.updated_at.isoformat(),
        "policy_changed_at": _time(group.policy_changed_at),
        "policy_unusable": group.unusable,
        "shares_since": _time(group.since),
        "policy_input": None if policy is None else policy_input(policy),
        "pool_size": group.pool_size,
        "workers": group.workers, "in_flight": group.in_flight,
        "pool_use": group.in_flight / capacity if capacity else None,
        "window_minutes": round(group.window.total_seconds() / 60),
        "served_total": served_total, "busy_minutes": group.busy_minutes,
        "full_minutes": group.full_minutes, "rate_per_s": group.rate_per_s,
        "rate_note": group.rate_note, "queues": queues,
    }


def family_entry(family: str, own: QueueInfo | None,
                 members: Sequence[QueueInfo]) -> QueueInfo:
    """A family entry of a policy as the fairness view shows it: its own settings (`own`,
    its entry of `queue_infos`, if any) with the jobs of the `members` it serves there."""
    counts, due, oldest = summed(members)
    return QueueInfo(family, paused=own is not None and own.paused,
                     limit=None if own is None else own.limit, counts=counts, due=due,
                     oldest_due_at=oldest, rate=None if own is None else own.rate,
                     members=len(members))


def family_held_back(info: QueueInfo) -> str | None:
    """Why a family's entry may be served less than its weight asks: "paused" (the
    family is), "nothing due" (none of its members has due jobs), else None. Its limit
    and rate bound each member on its own, so its members' own rows say when those hold
    one back; summed over them they would say nothing true."""
    if info.paused:
        return "paused"
    return "nothing due" if info.due == 0 else None


def groups_json(
    groups: Sequence[GroupObservation], infos: Sequence[QueueInfo], now: datetime,
) -> list[JSON]:
    """Every group of the fairness view."""
    return [group_json(group, infos, now) for group in groups]


def worker_json(worker: WorkerInfo, now: datetime,
                running: Sequence[RunningJob] = ()) -> JSON:
    """One worker process of the registry, with its jobs in flight among `running` (the
    live workers' leased jobs, longest running first; none for a dead worker)."""
    return {
        "id": worker.id, "host": worker.host, "pid": worker.pid, "version": worker.version,
        "started_at": worker.started_at.isoformat(), "last_seen": worker.last_seen.isoformat(),
        "last_seen_ago_s": max(0.0, (now - worker.last_seen).total_seconds()),
        "dead_at": worker.dead_at.isoformat(), "alive": worker.alive,
        "in_flight": worker.in_flight,
        "clock_offset_s": worker.clock_offset.total_seconds(),
        "groups": [{"name": g.name, "policy": policy_json(g.policy),
                    "policy_text": policy_text(g.policy), "pool_size": g.pool_size,
                    "in_flight": g.in_flight, "owner": g.owner} for g in worker.groups],
        "served": [{"group": c.group, "queue": c.queue, "outcome": c.outcome,
                    "count": c.count} for c in worker.served],
        "jobs": [running_to_json(one) for one in running if one.worker == worker.id],
    }


# -- Jobs -------------------------------------------------------------------------------------


def progress_bar(fields: JSON | None) -> JSON | None:
    """What the job page's progress bar shows of a job's `progress` (job_json's fields):
    `value` and `max` of the <progress> element (no value: a total not known), and the
    text beside it."""
    if fields is None:
        return None
    progress = Progress(fields["done"], fields["total"], fields["message"],
                        datetime.fromisoformat(fields["at"]))
    fraction = progress.fraction
    return {"value": None if fraction is None else round(fraction * 1000),
            "max": 1000, "text": progress_text(progress), "at": fields["at"]}


def job_json(job: JobRecord) -> JSON:
    """Every field of a job, and its last attempt's duration (the shape of `rota job
    --json`)."""
    duration = job.last_attempt_duration
    return {
        "id": job.id, "name": job.name, "queue": job.queue, "state": job.state.value,
        "attempt": job.attempt, "due_at": job.due_at.isoformat(), "args": list(job.args),
        "kwargs": job.kwargs, "last_error": job.last_error,
        "created_at": _time(job.created_at), "started_at": _time(job.started_at),
        "finished_at": _time(job.finished_at),
        "duration_s": None if duration is None else duration.total_seconds(),
        "result": job.result, "cancel_requested": job.cancel_requested,
        "lease_owner": job.lease_owner, "lease_expires_at": _time(job.lease_expires_at),
        "worker": job.worker,
        "progress": None if job.progress is None else progress_fields(job.progress),
        **({"arguments_error": job.arguments_error} if job.arguments_error else {}),
        **({"key": job.key} if job.key is not None else {}),
        **({"meta": job.meta} if job.meta else {}),
        **({"snoozes": job.snoozes} if job.snoozes else {}),
        **({"expires_at": _time(job.expires_at)} if job.expires_at is not None else {}),
        **({"after_outcome": job.after_outcome} if job.after_outcome is not None else {}),
        "errors": [attempt_error_fields(error) for error in job.errors],
        "last_traceback": job.last_traceback,
    }


# -- Workflows: a job's parents and children, and the graph around it --------------------

# Parents and children a job's page lists, and nodes per column of its workflow graph.
RELATED_SHOWN = 30
# The levels of a workflow graph, by their distance from the job (0).
LEVELS = {-2: "grandparents", -1: "parents", 0: "job", 1: "children", 2: "grandchildren"}


def related_json(store: Store, job: JobRecord, shown: int = RELATED_SHOWN,
                 ) -> tuple[JSON, dict[int, JobRecord | None]]:
    """The fields of a job's place in a workflow (those of `rota job --json`,
    `rota.store.workflow_view`), and the records read, by id (None: no longer stored)."""
    around = related(store, job, shown)
    return around.as_json(), dict(around.records)


def workflow_json(store: Store, job: JobRecord, related: JSON,
                  records: dict[int, JobRecord | None],
                  shown: int = RELATED_SHOWN) -> JSON | None:
    """The workflow around a job, two levels each way: its grandparents (the parents of
    its shown parents), its parents, the job, its children, its grandchildren (the
    children of its shown children), at most `shown` nodes a level, each node once (at
    the level nearest the job; `level` -2 to 2), with the edges between the nodes shown
    (from each node's own parents) and how many nodes of each level are left out
    (`more`, by level name; of the grandparents, those of the parents shown, and of the
    grandchildren those of the children shown). None for a job without parents or
    children. Besides `related_json`'s reads: `job_children` of each child shown, and at
    most `shown` grandparents and `shown` grandchildren (`records` gains them)."""
    if not related["parents_total"] and not related["children_total"]:
        return None
    levels: dict[int, list[int]] = {
        -1: [one["id"] for one in related["parents"]], 0: [job.id],
        1: [one["id"] for one in related["children"]]}
    more = {-1: related["parents_total"] - len(levels[-1]),
            1: related["children_total"] - len(levels[1])}
    placed = {node for nodes in levels.values() for node in nodes}
    # One level up: the parents of the parents shown (their records are read already),
    # but those that are parents of the job too (placed there).
    above: dict[int, None] = {}
    for parent in levels[-1]:
        record = records.get(parent)
        for grandparent in () if record is None else record.parents:
            if grandparent not in placed:
                above[grandparent] = None
    # One level down: the children of the children shown.
    below: dict[int, None] = {}
    for child in levels[1]:
        for grandchild in store.job_children(child):
            if grandchild not in placed:
                below[grandchild] = None
    levels[-2], more[-2] = list(above)[:shown], max(0, len(above) - shown)
    levels[2], more[2] = list(below)[:shown], max(0, len(below) - shown)
    records[job.id] = job
    for node in (*levels[-2], *levels[2]):
        if node not in records:
            records[node] = store.get_job(node)
    order = [(level, node) for level in sorted(levels) for node in levels[level]]
    shown_ids = {node for _, node in order}
    nodes = [{**relative_json(node, records[node]), "level": level} for level, node in order]
    # Every edge between two nodes shown, from each one's own parents.
    edges = [{"from": parent, "to": node} for _, node in order
             if (record := records[node]) is not None
             for parent in record.parents if parent in shown_ids]
    return {
        "nodes": nodes,
        "edges": edges,
        "more": {LEVELS[level]: count for level, count in sorted(more.items()) if count},
    }


# The graph's drawing: one column per level, left to right; node boxes and gaps in px.
NODE_W, NODE_H, COLUMN_GAP, ROW_GAP, MARGIN = 168, 34, 56, 10, 12


def workflow_svg(workflow: JSON, job_id: int) -> JSON:
    """Where `workflow_json`'s nodes, edges and "+N more" notes go in the job page's SVG:
    one column per level that has nodes (parents left, the job in the middle, children
    right), each column centred on the tallest, a straight line between columns and an
    arc beside the column for an edge between two nodes of one column. Coordinates in
    px of the SVG's own viewBox."""
    columns = sorted({node["level"] for node in workflow["nodes"]})
    per_column = {level: [n for n in workflow["nodes"] if n["level"] == level]
                  for level in columns}
    by_name = {name: level for level, name in LEVELS.items()}
    more = {by_name[name]: count for name, count in workflow["more"].items()}
    rows = max(len(nodes) + (1 if more.get(level) else 0)
               for level, nodes in per_column.items())
    step = NODE_H + ROW_GAP
    height = MARGIN * 2 + rows * step - ROW_GAP
    placed: dict[int, tuple[float, float]] = {}
    drawn_nodes: list[JSON] = []
    notes: list[JSON] = []
    for index, level in enumerate(columns):
        nodes = per_column[level]
        count = len(nodes) + (1 if more.get(level) else 0)
        x = MARGIN + index * (NODE_W + COLUMN_GAP)
        top = MARGIN + (rows - count) * step / 2
        for row, node in enumerate(nodes):
            y = top + row * step
            placed[node["id"]] = (x, y)
            drawn_nodes.append({**node, "x": x, "y": y, "current": node["id"] == job_id})
        if more.get(level):
            notes.append({"x": x + NODE_W / 2, "y": top + len(nodes) * step + NODE_H / 2 + 4,
                          "text": f"+{more[level]} more", "level": level})
    lines: list[JSON] = []
    for edge in workflow["edges"]:
        (x1, y1), (x2, y2) = placed[edge["from"]], placed[edge["to"]]
        if x1 < x2:
            lines.append({"from": edge["from"], "to": edge["to"], "path":
                          f"M{x1 + NODE_W:g},{y1 + NODE_H / 2:g} L{x2:g},{y2 + NODE_H / 2:g}"})
        elif x1 > x2:  # a grandparent that is a parent's child too, say: leftwards
            lines.append({"from": edge["from"], "to": edge["to"], "path":
                          f"M{x1:g},{y1 + NODE_H / 2:g} L{x2 + NODE_W:g},{y2 + NODE_H / 2:g}"})
        else:  # two nodes of one column: an arc on the column's left
            bulge = min(COLUMN_GAP - 8, 12 + abs(y2 - y1) / 6)
            lines.append({"from": edge["from"], "to": edge["to"], "path":
                          f"M{x1:g},{y1 + NODE_H / 2:g} Q{x1 - bulge:g},"
                          f"{(y1 + y2) / 2 + NODE_H / 2:g} {x2:g},{y2 + NODE_H / 2:g}"})
    width = MARGIN * 2 + len(columns) * (NODE_W + COLUMN_GAP) - COLUMN_GAP
    return {"width": width, "height": height, "node_w": NODE_W, "node_h": NODE_H,
            "nodes": drawn_nodes, "lines": lines, "notes": notes}


def job_json_with(job: JobRecord, related: JSON) -> JSON:
    """`job_json` with `related_json`'s fields before the traceback (the shape of `rota
    job --json`)."""
    fields = job_json(job)
    traceback = fields.pop("last_traceback")
    return {**fields, **related, "last_traceback": traceback}


def job_estimate_json(
    job: JobRecord, now: datetime, infos: Sequence[QueueInfo],
    groups: Sequence[GroupObservation], position: int | None = None,
) -> JSON | None:
    """'When will it run?' for a scheduled job; None for a job in any other state.

    A job due later: the wait until its due time, then the Queue's current estimate (as
    if enqueued then). A job due now: from `position`, its place among its Queue's due
    jobs (`Store.due_position`); without it, at most the time the Queue's whole due
    backlog takes, stated as such.
    """
    if job.state is not JobState.SCHEDULED:
        return None
    info = next((one for one in infos if one.name == job.queue), None)
    if info is None:
        info = QueueInfo(job.queue, counts=dict.fromkeys(JobState, 0))
    if job.due_at > now:
        wait = (job.due_at - now).total_seconds()
        queue_part = estimate_json(estimates_for(info, infos, groups))
        seconds = None if queue_part["seconds"] is None else wait + queue_part["seconds"]
        return {
            "seconds": seconds, "text": "in " + about(seconds) if seconds is not None
            else f"in {duration(wait)} when it is due, then {queue_part['text']}",
            "basis": f"due in {duration(wait)}; then, if its Queue's due backlog is the "
            f"same as now: {queue_part['text']} ({queue_part['basis']})",
            "groups": queue_part["groups"],
        }
    if position is not None:
        part = estimate_json(estimates_for(info, infos, groups, position=position), groups)
        return {**part, "basis": f"due now, number {position + 1} of the {info.due} due "
                f"job(s) of Queue {info.name} in claim order. {part['basis']}"}
    position = max(0, info.due - 1)
    part = estimate_json(estimates_for(info, infos, groups, position=position), groups)
    return {**part, "text": "in at most " + about(part["seconds"])
            if part["seconds"] else part["text"],
            "basis": f"due now, one of the {info.due} due job(s) of Queue {info.name}: "
            f"at most the time the whole due backlog takes. {part['basis']}"}


def schedule_json(info: ScheduleInfo, now: datetime) -> JSON:
    """One schedule (`rota.ScheduleInfo`), with how long until its next fire."""
    return {
        "name": info.name, "job": info.job, "rule": info.rule, "timezone": info.timezone,
        "queue": info.queue, "stored": info.stored, "paused": info.paused,
        "next_fire_at": _time(info.next_fire_at), "last_fire_at": _time(info.last_fire_at),
        "next_fire_in_s": None if info.next_fire_at is None
        else max(0.0, (info.next_fire_at - now).total_seconds()),
    }


def ago(seconds: float | None) -> str:
    return "" if seconds is None else short_duration(seconds)


def window_of(minutes: int) -> timedelta:
    return timedelta(minutes=minutes)


# -- Throughput and failures over time -------------------------------------------------------

# The outcomes of the served counts a chart shows as failures: attempts that raised (or
# ran out of time) and were retried, dead-lettered, or quarantined.
FAILED_OUTCOMES = frozenset({"retried", "dead_lettered", "quarantined"})
# The most bars a chart draws: a window longer than this many minutes puts several
# minutes in a bar.
MAX_BARS = 60


def timelines(served: Sequence[ServedCount], now: datetime, window: timedelta,
              key: Callable[[ServedCount], str]) -> dict[str, JSON]:
    """Per name `key` gives a history row (its group, or its Queue): its attempts per bar
    over the window ending with `now`'s minute, split into succeeded, failed (retried,
    dead-lettered, quarantined) and cancelled, from the store's per-minute served counts.

    Each chart: `bars` (oldest first: `start` ISO time, `succeeded`, `failed`,
    `cancelled`, `total`), `minutes_per_bar`, `peak` (the largest bar's total), and the
    window's `succeeded`, `failed` and `cancelled` totals."""
    minutes = max(1, round(window.total_seconds() / 60))
    per_bar = -(-minutes // MAX_BARS)  # ceiling
    count = -(-minutes // per_bar)
    end = minute_of(now) + timedelta(minutes=1)
    start = end - timedelta(minutes=per_bar * count)
    charts: dict[str, list[dict[str, int]]] = {}
    for row in served:
        if row.minute is None or not start <= row.minute < end:
            continue
        bars = charts.setdefault(key(row), [
            {"succeeded": 0, "failed": 0, "cancelled": 0} for _ in range(count)])
        index = int((row.minute - start).total_seconds() // 60) // per_bar
        kind = ("failed" if row.outcome in FAILED_OUTCOMES else
                "cancelled" if row.outcome == "cancelled" else "succeeded")
        bars[index][kind] += row.count
    return {name: _chart(bars, start, per_bar) for name, bars in sorted(charts.items())}


def _chart(bars: list[dict[str, int]], start: datetime, per_bar: int) -> JSON:
    shaped = [{"start": (start + timedelta(minutes=index * per_bar)).isoformat(), **bar,
               "total": sum(bar.values())} for index, bar in enumerate(bars)]
    return {"bars": shaped, "minutes_per_bar": per_bar,
            "peak": max((sum(bar.values()) for bar in bars), default=0),
            **{kind: sum(bar[kind] for bar in bars)
               for kind in ("succeeded", "failed", "cancelled")}}
