"""`rota policy`: show or change a Worker Group's Dispatch Policy while workers run.

The policy is stored in the store (`App.set_group_policy`); every worker running the
group switches to it at its next pass. Without a flag the command shows the policy in
force: the stored one, else the code's (known with --app only). The policy syntax is
`rota simulate`'s (one parser: rota.cli.simulate.parse_policy).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from typing import TypeAlias

from rota.app.groups import check_group_known, policy_in_force
from rota.cli.common import UsageError, add_store_options, load_app, opened_store, store_now
from rota.cli.simulate import parse_policy
from rota.core.groups import WorkerGroupOptions, validate_group_name
from rota.core.policy import DispatchPolicy, PolicyFault, Weighted
from rota.core.serving import PolicyInForce
from rota.store.base import Store

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
# Queues shown on one line before the rest are counted (--json lists them all).
SHOWN_QUEUES = 20


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "policy", help="show or change a Worker Group's policy while its workers run",
        description=(
            "Without a flag, show the Dispatch Policy in force for GROUP: the one stored "
            "in the store, else the one in the code (known with --app). With --weighted "
            "or --strict, store a new policy: every worker running GROUP switches to it "
            "at its next pass, without a restart (Queues in both policies keep their "
            "credits; a new Queue catches up as one returning from idle). --clear goes "
            "back to the policy in the code. The policy is checked as a group's start "
            "checks it (weights are whole numbers from 1 to 2147483647). GROUP must be "
            "known: a worker registered it, --app defines it, or a policy is stored for "
            "it; --force sets one for a group whose workers have not started yet."),
        epilog="examples: rota policy tenants --weighted a=5,b=1 --store sqlite:///rota.db; "
        "rota policy tenants --app myapp:app",
    )
    parser.add_argument("group", metavar="GROUP", help="the Worker Group's name")
    change = parser.add_mutually_exclusive_group()
    change.add_argument("--weighted", metavar="Q=W,...",
                        help="store a Weighted policy: Queue=weight pairs, e.g. a=5,b=1")
    change.add_argument("--strict", metavar="Q1,Q2,...",
                        help="store a Strict policy: Queues, highest priority first")
    change.add_argument("--clear", action="store_true",
                        help="remove the stored policy: the group runs its code's again")
    parser.add_argument("--force", action="store_true",
                        help="set the policy even if no worker runs GROUP yet and --app "
                        "does not define it (a new group, before its workers start)")
    add_store_options(parser, json_help="print the policy in force as JSON",
                      app_help="use this App's store, and show its code's policy for GROUP")
    parser.set_defaults(func=run)


def _group(text: str) -> str:
    try:
        return validate_group_name(text)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _new_policy(args: argparse.Namespace) -> DispatchPolicy | None:
    """The policy the flags give (None for --clear), checked as a group's start checks
    it: a bad one is a usage error naming what is at fault."""
    if args.clear:
        return None
    _not_empty(args)
    policy = parse_policy(args.strict, args.weighted)
    try:
        policy.validate()
    except ValueError as error:
        fault = error.__cause__
        detail = f" ({fault})" if isinstance(fault, PolicyFault) else ""
        raise UsageError(f"{error}{detail}") from None
    return policy


def _not_empty(args: argparse.Namespace) -> None:
    """Refuse `--weighted ''` and `--strict ''` (a shell variable that came out empty):
    a usage error saying what the option takes, not a policy without Queues."""
    for option, text, example in (("--weighted", args.weighted, "Queue=weight pairs, e.g. "
                                   "--weighted a=5,b=1"),
                                  ("--strict", args.strict, "Queues, e.g. --strict a,b")):
        if text is not None and not text.replace(",", "").strip():
            raise UsageError(f"{option} needs {example}; got {text!r}. --clear goes back "
                             "to the policy in the code")


def policy_text(policy: DispatchPolicy, limit: int | None = SHOWN_QUEUES) -> str:
    """A policy in the flags' own syntax (`Weighted a=5,b=1`, `Strict a,b`), the Queues
    after the first `limit` counted rather than listed."""
    if isinstance(policy, Weighted):
        items = [f"{queue}={weight}" for queue, weight in policy.weights]
        kind = "Weighted"
    else:
        items, kind = list(policy.queues), "Strict"
    shown = items if limit is None or len(items) <= limit else [
        *items[:limit], f"... ({len(items) - limit} more)"]
    return f"{kind} {','.join(shown)}"


def _check_known(store: Store, defined: Iterable[str], group: str) -> None:
    """A group nobody runs or defines is a usage error naming the known ones."""
    try:
        check_group_known(store, defined, group, "--force")
    except ValueError as error:
        raise UsageError(str(error)) from None


def _as_json(group: str, found: PolicyInForce | None) -> dict[str, object]:
    if found is None:
        return {"group": group, "policy": None, "source": None}
    policy = found.policy
    return {
        "group": group,
        "policy": ("weighted" if isinstance(policy, Weighted) else "strict"),
        "queues": list(policy.queues),
        "weights": ([w for _, w in policy.weights] if isinstance(policy, Weighted) else None),
        "source": "code" if found.stored is None else "stored",
        "version": None if found.stored is None else found.stored.version,
        "unusable": found.unusable,
    }


def _show(group: str, found: PolicyInForce | None, app_spec: str | None) -> None:
    if found is None:
        print(f"Worker Group {group!r}: no policy stored; it runs the policy in its code "
              "(give --app to see it)")
        return
    if found.stored is not None:
        where = f"stored, version {found.stored.version}"
    else:
        where = f"the code's, in {app_spec}" if app_spec else "the code's"
    print(f"Worker Group {group!r}: {policy_text(found.policy)} ({where})")
    if found.unusable:
        print(f"a stored policy is not in force: {found.unusable}")


def run(args: argparse.Namespace) -> int:
    group = _group(args.group)
    # `is not None`: an empty --weighted '' is a change to refuse, not a show.
    changing = args.weighted is not None or args.strict is not None or args.clear
    if args.force and not changing:
        raise UsageError("--force goes with --weighted, --strict or --clear")
    new = _new_policy(args) if changing else None
    code = None
    options: dict[str, WorkerGroupOptions] = {}
    if args.app and not args.store:
        options = {o.name: o for o in load_app(args.app, read_only=not changing).worker_groups}
        code = options[group].policy if group in options else None
    with opened_store(args.store, args.app, read_only=not changing) as store:
        if changing:
            if not args.force:
                _check_known(store, options, group)
            version = store.set_group_policy(group, new, store_now(store))
            done = ("cleared: it runs the policy in its code" if new is None
                    else f"set to {policy_text(new)}")
            if not args.json:
                print(f"Worker Group {group!r}: {done} (version {version}); its running "
                      "workers switch at their next pass")
        try:
            found: PolicyInForce | None = policy_in_force(store, code, group)
        except ValueError:
            found = None
    if args.json:
        print(json.dumps(_as_json(group, found)))
    elif not changing:
        _show(group, found, args.app)
    return 0
