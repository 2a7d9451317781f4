"""The Weighted planner alone, in instructions: record one drain's planner calls, replay
them on a fresh dispatcher (docs/benchmarks.md).

    # record once (any tree: the planner is exact, so the calls are the same on both)
    PYTHONPATH=.:src python -m benchmarks.planner_replay record 10000 100 /tmp/log.pkl
    # per tree, N = 0 (load only) and 1 (load and replay), under callgrind:
    PYTHONPATH=<tree>/src valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python benchmarks/planner_replay.py replay 10000 /tmp/log.pkl N

Per job: (instructions with N = 1 - instructions with N = 0) / jobs. `replay` imports only
rota (run it as a file with the tree's `src` on the path), and raises if the replay does
not dispatch what the drain dispatched. Set `PYTHONHASHSEED` to compare runs closely: the
hash order of sets moves a figure by up to ~2 %.
"""

from __future__ import annotations

import gc
import pickle
import sys
from typing import Any


def record(queues: int, backlogged: int, path: str, jobs: int = 10_000) -> None:
    from benchmarks.suites.queues import PlannerLog, measure

    log = PlannerLog()
    measure("memory", queues, backlogged, jobs, log=log)
    with open(path, "wb") as file:
        pickle.dump((log.calls, log.orders), file)
    print(f"{queues} Queues ({backlogged} backlogged): {len(log.calls)} calls, "
          f"{sum(log.orders)} jobs -> {path}")


def replay_calls(dispatcher: Any, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]
                 ) -> list[int]:
    """Make a drain's logged planner calls (`benchmarks.suites.queues.PlannerLog`) again on
    `dispatcher`; returns each pass's dispatched count, to check against the drain's."""
    plan: Any = None
    orders: list[int] = []
    for name, args, kwargs in calls:
        if name == "begin_pass":
            plan = dispatcher.begin_pass(*args, **kwargs)
        elif name == "dispatch_order":
            orders.append(len(plan.dispatch_order()))
        else:
            getattr(plan, name)(*args, **kwargs)
    return orders


def replay(queues: int, path: str, run: bool) -> None:
    import rota
    from rota.core import dispatch

    with open(path, "rb") as file:
        calls, orders = pickle.load(file)
    # The suite's policy (benchmarks.suites.queues.policy_for), spelled out so that this
    # imports nothing but rota.
    policy = rota.Weighted([(f"t{i:05d}", 1 + i % 5) for i in range(queues)])
    gc.freeze()
    dispatcher = dispatch.Dispatcher.for_policy(policy, remember_empty=True)
    if not run:
        return
    if replay_calls(dispatcher, calls) != orders:
        raise SystemExit("the replay did not dispatch what the drain dispatched")


def main(argv: list[str]) -> None:
    if len(argv) == 4 and argv[0] == "record":
        record(int(argv[1]), int(argv[2]), argv[3])
    elif len(argv) == 4 and argv[0] == "replay":
        replay(int(argv[1]), argv[2], argv[3] == "1")
    else:
        raise SystemExit("usage: planner_replay.py record QUEUES BACKLOGGED PATH | "
                         "replay QUEUES PATH 0|1")


if __name__ == "__main__":
    main(sys.argv[1:])
