"""`rota simulate`: print the exact claim schedule of a policy, no store needed.

Uses `rota.core.simulation`, which drives the very dispatcher the worker uses.
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from rota.cli.common import UsageError, whole_number
from rota.cli.display import boxed_table, line, make_console, user_text
from rota.core.plurals import counted
from rota.core.policy import DispatchPolicy, Weighted
from rota.core.policy_text import parse_pairs
from rota.core.policy_text import parse_policy as policy_from_text
from rota.core.simulation import SimulatedClaim, SimulatedPass, Simulation, simulate

# Bounds that keep a simulation to a few seconds.
MAX_POOL = 10_000
MAX_PASSES = 100_000
# Above this many Queues the served table is laid out by `boxed_table` (the same look)
# instead of rich's Table, which took ~4 s for 10,000 tenant Queues.
_RICH_TABLE_ROWS = 200


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="print the exact claim schedule of a dispatch policy (no store needed)",
        description=(
            "Print each pass's claims (Queue, size, jobs got), its probes of Queues the "
            "group holds for empty, and its dispatch order for a policy, pool size and "
            "backlog, then the served shares against the weights: what a Worker Group "
            "does under run_until_idle(). Every dispatched job is taken to finish before "
            "the next pass, so a limit caps each pass."
        ),
        epilog="example: rota simulate --weighted a=6,b=3,c=1 --pool 10 --passes 3 "
        "--paused b --limit a=2",
    )
    policy = parser.add_mutually_exclusive_group(required=True)
    policy.add_argument("--strict", metavar="Q1,Q2,...",
                        help="Strict policy: Queues, highest priority first")
    policy.add_argument("--weighted", metavar="Q=W,...",
                        help="Weighted policy: Queue=weight pairs, e.g. a=6,b=3,c=1")
    parser.add_argument("--pool", type=whole_number(1, MAX_POOL), default=10, metavar="N",
                        help="free Workers per pass (default 10)")
    parser.add_argument("--passes", type=whole_number(0, MAX_PASSES), default=3, metavar="N",
                        help="passes to simulate (default 3)")
    parser.add_argument("--backlog", metavar="Q=N,...",
                        help="due jobs per Queue at the start (default: unlimited)")
    parser.add_argument("--paused", metavar="Q1,Q2,...",
                        help="Queues that are paused (claims take none of their jobs)")
    parser.add_argument("--limit", metavar="Q=N,...",
                        help="Queue concurrency limits: at most N of its jobs leased at once")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(func=run)


def _pairs(text: str, flag: str) -> list[tuple[str, int]]:
    try:
        return parse_pairs(text, flag)
    except ValueError as error:
        raise UsageError(str(error)) from None


def parse_policy(strict: str | None, weighted: str | None) -> DispatchPolicy:
    """The policy of --strict or --weighted (rota.core.policy_text); a usage error for
    text that is not the syntax."""
    try:
        return policy_from_text(strict, weighted)
    except ValueError as error:
        raise UsageError(str(error)) from None


def run(args: argparse.Namespace) -> int:
    policy = parse_policy(args.strict, args.weighted)
    backlog = dict(_pairs(args.backlog, "--backlog")) if args.backlog else None
    paused = [q.strip() for q in args.paused.split(",") if q.strip()] if args.paused else []
    limits = dict(_pairs(args.limit, "--limit")) if args.limit else {}
    try:
        result = simulate(policy, args.pool, args.passes, backlog, paused=paused,
                          limits=limits)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.json:
        print(json.dumps(as_json(result), indent=2))
    else:
        render(result, make_console())
    return 0


def describe(policy: DispatchPolicy) -> str:
    if isinstance(policy, Weighted):
        return "Weighted " + ":".join(str(w) for _, w in policy.weights) + " over " + \
            ", ".join(policy.queues)
    return "Strict " + " > ".join(policy.queues)


def as_json(result: Simulation) -> dict[str, object]:
    targets = result.target_shares()
    served = result.served()
    total = sum(served.values())
    return {
        "policy": describe(result.policy),
        "pool_size": result.pool_size,
        "passes": [
            {
                "round_trips": [
                    {"claims": [_claim_json(c) for c in trip.claims],
                     "probe": list(trip.probe), "due": list(trip.due)}
                    for trip in p.round_trips
                ],
                "claims": [_claim_json(c) for c in p.claims],
                "order": list(p.order),
            }
            for p in result.passes
        ],
        "paused": list(result.paused),
        "limits": result.limits,
        "served": served,
        "shares": {q: (n / total if total else 0.0) for q, n in served.items()},
        "target_shares": targets,
    }


def _claim_json(claim: SimulatedClaim) -> dict[str, object]:
    return {"queues": list(claim.queues), "limit": claim.limit, "got": claim.got}


# A probe of more Queues than this is shown as counts, not names.
_PROBE_NAMES = 8


def _probes(one: SimulatedPass) -> str:
    """The pass's probes alone (round trips that claim nothing), for people."""
    parts = []
    for trip in one.round_trips:
        if trip.claims:
            continue
        if len(trip.probe) <= _PROBE_NAMES:
            due = ",".join(trip.due) or "none"
            parts.append(f"{','.join(trip.probe)} (due: {due})")
        else:
            parts.append(f"{counted(len(trip.probe), 'Queue')} ({len(trip.due)} with due work)")
    return "; ".join(parts)


def render(result: Simulation, console: Console) -> None:
    controls = "".join(
        [f", paused {','.join(result.paused)}" if result.paused else "",
         ", limit " + ",".join(f"{q}={n}" for q, n in result.limits.items())
         if result.limits else ""])
    passes = counted(len(result.passes), "pass", "passes")
    console.print(line(user_text(describe(result.policy), "bold"),
                       f", pool {result.pool_size}, {passes}",
                       user_text(controls)))
    for number, one in enumerate(result.passes, 1):
        claims = ", ".join(
            f"{c.limit} from {'+'.join(c.queues)}"
            + ("" if c.got == c.limit else f" (got {c.got})")
            for c in one.claims
        ) or "none"
        if probes := _probes(one):
            console.print(line(f"pass {number}: probes ", user_text(probes)))
            console.print(line("        claims ", user_text(claims)))
        else:
            console.print(line(f"pass {number}: claims ", user_text(claims)))
        console.print(line("        order  ", user_text(" ".join(one.order) or "(nothing due)")))
    served = result.served()
    total = sum(served.values())
    targets = result.target_shares()
    weights = dict(result.policy.weights) if isinstance(result.policy, Weighted) else {}
    columns = [("Queue", False)] + (
        [("weight", True), ("target", True)] if targets is not None else []) + [
        ("served", True), ("share", True)]
    rows = [[queue] + ([str(weights[queue]), f"{targets[queue]:.1%}"]
                       if targets is not None else [])
            + [str(count), f"{count / total:.1%}" if total else "-"]
            for queue, count in served.items()]
    if len(rows) > _RICH_TABLE_ROWS:
        console.print(boxed_table("served", columns, rows), no_wrap=True, crop=False)
        return
    table = Table(title="served")
    for header, right in columns:
        table.add_column(header, justify="right" if right else "left")
    for row in rows:
        table.add_row(*map(user_text, row))
    console.print(table)
