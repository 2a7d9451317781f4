"""`rota simulate`: print the exact claim schedule of a policy, no store needed.

Uses `rota.core.simulation`, which drives the very dispatcher the worker uses.
"""

from __future__ import annotations

import argparse
import json
from datetime import timedelta

from rich.console import Console
from rich.table import Table

from rota.cli.common import UsageError, whole_number
from rota.cli.display import boxed_table, line, make_console, print_whole, user_text
from rota.cli.queue_controls import rate_as_json
from rota.core.plurals import counted
from rota.core.policy import DispatchPolicy, Weighted
from rota.core.policy_text import parse_pairs
from rota.core.policy_text import parse_policy as policy_from_text
from rota.core.rates import PERIOD_FORM, RATE_FORM, QueueRate, parse_period, parse_rate
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
            "the next pass, so a limit caps each pass. With --rate, time is virtual: a "
            "pass that dispatched jobs is followed by the next one --pass-every later; "
            "one that dispatched nothing is followed at once while the group has Queues "
            "to probe, else when the first rated Queue with due jobs gets a token again "
            "(an idle worker sleeps until then). Each pass shows its time and the rated "
            "Queues it found out of tokens, whose slots went to the other Queues; the "
            "end shows what each rated Queue was served against its bound."
        ),
        epilog="examples: rota simulate --weighted a=6,b=3,c=1 --pool 10 --passes 3 "
        "--paused b --limit a=2; rota simulate --weighted a=1,b=1 --pool 4 --passes 12 "
        "--rate a=6/1m --burst a=2 --pass-every 5s",
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
    parser.add_argument("--rate", metavar="Q=N/PERIOD,...",
                        help="Queue rate limits, as `rota rate` sets them: at most "
                        "BURST + N * T / PERIOD of a Queue's jobs claimed over any "
                        f"simulated time T, its bucket full at the start ({RATE_FORM})")
    parser.add_argument("--burst", metavar="Q=B,...",
                        help="the burst of a rated Queue, as `rota rate --burst` (default: "
                        "its rate's N)")
    parser.add_argument("--pass-every", metavar="PERIOD", default="1s",
                        help="virtual time from a pass that dispatched jobs to the next: "
                        f"the time its jobs take, side by side ({PERIOD_FORM}; default 1s). "
                        "Only rate limits depend on time")
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


def parse_rates(text: str | None, bursts: str | None) -> dict[str, QueueRate]:
    """The rates of `--rate a=10/1m,b=6/30s` with the bursts of `--burst a=20`: each rate
    text read as `rota rate` reads it (rota.core.rates.parse_rate); a usage error for
    anything else, or a burst of a Queue without a rate."""
    burst_of = dict(_pairs(bursts, "--burst")) if bursts else {}
    rates: dict[str, QueueRate] = {}
    for item in (text or "").split(",") if text else []:
        queue, sep, rate_text = item.strip().partition("=")
        if not sep or not queue.strip():
            raise UsageError(f"--rate takes Queue=N/PERIOD pairs like a=10/1m,b=6/30s; got "
                             f"{item[:40]!r}")
        try:
            rates[queue.strip()] = parse_rate(rate_text, burst_of.get(queue.strip()))
        except ValueError as error:
            raise UsageError(f"--rate of Queue {queue.strip()!r}: {error}") from None
    for queue in burst_of:
        if queue not in rates:
            raise UsageError(f"--burst names Queue {queue!r}, which has no --rate")
    return rates


def _period(text: str) -> timedelta:
    try:
        return parse_period(text)
    except ValueError as error:
        raise UsageError(f"--pass-every: {error}") from None


def run(args: argparse.Namespace) -> int:
    policy = parse_policy(args.strict, args.weighted)
    backlog = dict(_pairs(args.backlog, "--backlog")) if args.backlog else None
    paused = [q.strip() for q in args.paused.split(",") if q.strip()] if args.paused else []
    limits = dict(_pairs(args.limit, "--limit")) if args.limit else {}
    rates = parse_rates(args.rate, args.burst)
    pass_every = _period(args.pass_every)
    try:
        result = simulate(policy, args.pool, args.passes, backlog, paused=paused,
                          limits=limits, rates=rates, pass_every=pass_every)
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
                "at_s": p.at.total_seconds(),
                "out_of_tokens": list(p.starved),
            }
            for p in result.passes
        ],
        "paused": list(result.paused),
        "limits": result.limits,
        "rates": {queue: rate_as_json(rate) for queue, rate in result.rates.items()},
        "pass_every_s": result.pass_every.total_seconds(),
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


def _seconds(at: timedelta) -> str:
    return f"{at.total_seconds():g} s"


def _spans(times: list[tuple[int, timedelta]]) -> str:
    """Passes (number, time) as spans of consecutive passes: `+1 s to +3 s, +9 s`."""
    spans: list[list[tuple[int, timedelta]]] = []
    for number, at in times:
        if spans and spans[-1][-1][0] == number - 1:
            spans[-1].append((number, at))
        else:
            spans.append([(number, at)])
    return ", ".join(f"+{_seconds(span[0][1])}" if len(span) == 1 else
                     f"+{_seconds(span[0][1])} to +{_seconds(span[-1][1])}" for span in spans)


def render_rates(result: Simulation, console: Console) -> None:
    """Each rated Queue: served against its bound over the simulated time, and when it
    was out of tokens."""
    if not result.passes:
        return
    span = result.passes[-1].at
    served = result.served()
    for queue, rate in result.rates.items():
        bound = rate.burst + rate.jobs * span // rate.per
        starved = [(number, one.at) for number, one in enumerate(result.passes, 1)
                   if queue in one.starved]
        when = (f"out of tokens in {counted(len(starved), 'pass', 'passes')}: "
                f"{_spans(starved)}" if starved else "never out of tokens")
        console.print(line(
            user_text(queue, "bold"),
            f": rate {rate}, served {served[queue]} over {_seconds(span)}, at most "
            f"{rate.burst} + {rate.jobs} * {span.total_seconds():g} / "
            f"{rate.per.total_seconds():g} = {bound}"))
        console.print(f"  {when}")


def render(result: Simulation, console: Console) -> None:
    controls = "".join(
        [f", paused {','.join(result.paused)}" if result.paused else "",
         ", limit " + ",".join(f"{q}={n}" for q, n in result.limits.items())
         if result.limits else "",
         ", rate " + ",".join(f"{q}={r}" for q, r in result.rates.items())
         + f", a pass every {_seconds(result.pass_every)}" if result.rates else ""])
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
        name = f"pass {number} at +{_seconds(one.at)}" if result.rates else f"pass {number}"
        if probes := _probes(one):
            console.print(line(f"{name}: probes ", user_text(probes)))
            console.print(line("        claims ", user_text(claims)))
        else:
            console.print(line(f"{name}: claims ", user_text(claims)))
        console.print(line("        order  ", user_text(" ".join(one.order) or "(nothing due)")))
        if one.starved:
            console.print(line("        out of tokens ", user_text(",".join(one.starved))))
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
    else:
        table = Table(title="served")
        for header, right in columns:
            table.add_column(header, justify="right" if right else "left")
        for row in rows:
            table.add_row(*map(user_text, row))
        print_whole(console, table)
    render_rates(result, console)
