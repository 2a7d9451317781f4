"""`rota requeue`: bring dead-lettered, quarantined or cancelled jobs back to their Queues."""

from __future__ import annotations

import argparse
import json

from rota.cli.common import (
    CommandError,
    UsageError,
    add_meta_option,
    add_store_options,
    job_id_arg,
    meta_arg,
    opened_store,
    store_now,
)
from rota.core.job_filters import job_filter
from rota.core.jobs import REQUEUEABLE_STATES, JobState
from rota.core.plurals import counted
from rota.core.queues import validate_queue_name
from rota.store import Store, bulk

STATES = sorted(state.value for state in REQUEUEABLE_STATES)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "requeue", help="run dead-lettered, quarantined or cancelled jobs again",
        description="Put jobs back on their Queues, scheduled, attempt 0, due now: by id "
        "(`rota requeue 12 13`), or all jobs in one state, of one Queue or of all "
        f"(`rota requeue --state dead_lettered [--queue emails]`), or those a --meta or "
        "--name filter selects (in any of the states, or in --state; `rota requeue --meta "
        f"tenant=acme`). States: {', '.join(STATES)}."
        " Exit 1 if a job given by id could not be requeued.",
    )
    parser.add_argument("ids", nargs="*", type=job_id_arg, metavar="ID", help="job ids")
    parser.add_argument("--state", choices=STATES, help="requeue every job in this state")
    parser.add_argument("--queue", metavar="QUEUE",
                        help="with --state, --name or --meta: only jobs of this Queue")
    parser.add_argument("--name", metavar="NAME", help="requeue the jobs of this job name")
    add_meta_option(parser)
    add_store_options(parser, json_help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    meta = meta_arg(args.meta)
    selecting = args.name is not None or meta is not None
    if args.ids and (args.state or args.queue or selecting):
        raise UsageError("give job ids, or --state (and --queue), not both")
    if not args.ids and not args.state and not selecting:
        raise UsageError("give job ids, or --state S to requeue every job in state S "
                         "(add --queue Q for one Queue), or --meta KEY=VALUE / --name N")
    if args.queue is not None:
        try:
            validate_queue_name(args.queue)
        except ValueError as error:
            raise UsageError(str(error)) from None
    with opened_store(args.store, args.app) as store:
        if selecting:
            selected = job_filter(args.queue, args.state, args.name, meta)
            count = bulk.requeue_jobs(store, selected, store_now(store)).count
            if args.json:
                print(json.dumps({"requeued": count}))
            else:
                print(f"requeued {counted(count, 'job')}")
            return 0
        if args.state:
            return _requeue_many(store, JobState(args.state), args.queue, args.json)
        return _requeue_ids(store, args.ids, args.json)


def _requeue_many(store: Store, state: JobState, queue: str | None, as_json: bool) -> int:
    count = store.requeue_many(state=state, queue=queue, now=store_now(store))
    if as_json:
        print(json.dumps({"requeued": count, "state": state.value, "queue": queue}))
    else:
        where = f"Queue {queue!r}" if queue is not None else "every Queue"
        print(f"requeued {counted(count, f'{state.value} job')} of {where}")
    return 0


def _requeue_ids(store: Store, ids: list[int], as_json: bool) -> int:
    requeued: list[int] = []
    refused: dict[int, str] = {}
    for job_id in ids:
        if store.requeue(job_id, store_now(store)):
            requeued.append(job_id)
            if not as_json:
                print(f"{job_id} requeued")
            continue
        job = store.get_job(job_id)
        if job is None:
            refused[job_id] = "no such job"
        elif job.state in REQUEUEABLE_STATES and job.key is not None:
            refused[job_id] = (f"a live job already holds its key {job.key!r} "
                               "(unique jobs: requeue it once that job has finished)")
        else:
            refused[job_id] = f"it is {job.state.value}"
    if as_json:
        print(json.dumps({
            "requeued": requeued,
            "not_requeued": [{"id": i, "reason": why} for i, why in refused.items()],
        }))
    if refused:
        reasons = "; ".join(f"job {i}: {why}" for i, why in refused.items())
        raise CommandError(f"not requeued (only {', '.join(STATES)} jobs can be): {reasons}")
    return 0
