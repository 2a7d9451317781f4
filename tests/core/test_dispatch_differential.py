"""The Weighted planner (heaps over credit offsets) against its plainest form
(tests/core/reference_dispatch.py): the same claims, the same dispatch order, the same
credits, pass after pass, for many Queues, weights, backlogs, reflows, failed claims,
skipped jobs and passes cut short.

Two modes:
- a dispatcher that forgets empty Queues at the end of a pass must equal the reference;
- a dispatcher that remembers them (as every Worker Group does, its claims probing their
  own Queues) must equal the reference given, at the start of each pass, the Queues it
  holds for empty after its probe, and told the Queues each claim drained.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rota import Weighted
from rota.core.dispatch import ClaimRequest, PassPlan, WeightedDispatcher, for_policy
from tests.core.reference_dispatch import ReferenceDispatcher, ReferencePass

UNLIMITED = 10**9
Job = tuple[int, int]  # (Queue index, serial)


@dataclass
class Supply:
    """Due jobs per Queue, answering claims like the store contract (fake, no store)."""

    due: list[int]

    def take(self, queue: int, limit: int) -> int:
        got = min(self.due[queue], limit)
        self.due[queue] -= got
        return got


@dataclass(frozen=True)
class PassScript:
    free: int
    fail_at: int | None  # the claim number (within the pass) that raises, if any
    cut_after: int | None  # cut the pass short after this many claims, if any
    skip_every: int  # skip (hand back) every n-th dispatched job; 0: none
    refill: tuple[tuple[int, int], ...]  # (Queue, jobs) added before the pass
    recheck: bool


def run_pass(
    plan: PassPlan[Job] | ReferencePass[Job], names: tuple[str, ...], supply: Supply,
    script: PassScript, controlled: frozenset[int] = frozenset(), probes: bool = False,
    first: list[ClaimRequest] | None = None,
) -> tuple[list[tuple[int, int, int | None]], list[Job]]:
    """Run one pass against `supply`; with `probes`, each claim tells the plan the Queues
    it drained (as a Worker Group's claims do). `first`: the pass's first round, already
    taken from the plan. Returns the claims (first Queue, limit,
    got or None when it failed) and the dispatch order."""
    index = {name: i for i, name in enumerate(names)}
    claims: list[tuple[int, int, int | None]] = []
    serial = [0] * len(names)
    held = 0
    while requests := (first or plan.next_claims()):
        first = None
        stop = False
        round_left = script.free - held  # a round asks for the pass's room in all
        for request in requests:
            assert not request.probe
            if script.cut_after is not None and len(claims) >= script.cut_after:
                plan.cut_short()
                stop = True
                break
            queue = index[request.queues[0]]
            if script.fail_at is not None and len(claims) == script.fail_at:
                claims.append((queue, request.limit, None))
                plan.claim_failed(request)
                stop = True
                break
            jobs: list[Job] = []
            limit = min(request.limit, round_left)
            for name in request.queues:  # one Queue, or a sweep: each in turn
                swept = index[name]
                room = limit - len(jobs)
                # (a controlled Queue gives at most one job a claim, as a limit would)
                got = supply.take(swept, min(room, 1) if swept in controlled else room)
                jobs.extend((swept, serial[swept] + n) for n in range(got))
                serial[swept] += got
            claims.append((queue, request.limit, len(jobs)))
            held += len(jobs)
            round_left -= len(jobs)
            drained = [name for name in request.queues
                       if probes and supply.due[index[name]] == 0]
            if isinstance(plan, ReferencePass):
                plan.claimed(request, jobs, drained)
            else:
                plan.claimed(request, jobs, drained=drained, controlled=[
                    name for name in request.queues if index[name] in controlled])
        if stop:
            break
    order = plan.dispatch_order()
    for number, _job in enumerate(order):
        if script.skip_every and number % script.skip_every == script.skip_every - 1:
            plan.skip()
        else:
            plan.serve()
    return claims, order


def begin_new(
    dispatcher: WeightedDispatcher, supply: Supply, script: PassScript
) -> tuple[PassPlan[Job], list[ClaimRequest], frozenset[int]]:
    """Begin the planner's pass and answer its probe if it asks one first; return the
    plan, its first round of claims if that was not a probe (for `run_pass` to issue),
    and the Queues it then holds for empty."""
    plan: PassPlan[Job] = dispatcher.begin_pass(
        script.free, recheck=script.recheck, queue_of=queue_of)
    first = plan.next_claims()
    if first and first[0].probe:
        request = first[0]
        plan.probed(request, {name for name in request.queues
                              if supply.due[dispatcher.index[name]] > 0})
        first = []
    return plan, first, frozenset(dispatcher.state.out)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[int], list[int], list[PassScript]]:
    count = draw(st.integers(1, 40))
    # Few distinct weights (the common case: tenants in tiers) or any weights, 1000:1 too.
    weight_values = draw(st.one_of(
        st.lists(st.integers(1, 5), min_size=1, max_size=3),
        st.lists(st.integers(1, 1000), min_size=1, max_size=count),
    ))
    weights = [draw(st.sampled_from(weight_values)) for _ in range(count)]
    due = draw(st.lists(
        st.one_of(st.just(0), st.integers(0, 30), st.just(UNLIMITED)),
        min_size=count, max_size=count))
    passes = draw(st.lists(st.builds(
        PassScript,
        free=st.integers(0, 64),
        fail_at=st.one_of(st.none(), st.none(), st.integers(0, 8)),
        cut_after=st.one_of(st.none(), st.none(), st.none(), st.integers(0, 8)),
        skip_every=st.sampled_from([0, 0, 0, 2, 5]),
        refill=st.lists(st.tuples(st.integers(0, count - 1), st.integers(1, 40)),
                        max_size=3).map(tuple),
        recheck=st.booleans(),
    ), min_size=1, max_size=25))
    return weights, due, passes


@st.composite
def crowds(draw: st.DrawFn) -> tuple[list[int], list[int], list[PassScript]]:
    """Many Queues, most of them with a few jobs or none: passes whose reflow rounds find
    Queues empty round after round, several at a time."""
    count = draw(st.integers(2, 120))
    weight_values = draw(st.one_of(
        st.lists(st.integers(1, 5), min_size=1, max_size=5),
        st.lists(st.integers(1, 1000), min_size=1, max_size=count),
    ))
    weights = [draw(st.sampled_from(weight_values)) for _ in range(count)]
    due = draw(st.lists(st.one_of(st.integers(0, 3), st.integers(0, 3), st.integers(0, 40)),
                        min_size=count, max_size=count))
    passes = draw(st.lists(st.builds(
        PassScript,
        free=st.integers(1, 64),
        fail_at=st.one_of(st.none(), st.none(), st.none(), st.integers(0, 30)),
        cut_after=st.one_of(st.none(), st.none(), st.none(), st.integers(0, 30)),
        skip_every=st.sampled_from([0, 0, 0, 3]),
        refill=st.lists(st.tuples(st.integers(0, count - 1), st.integers(1, 5)),
                        max_size=8).map(tuple),
        recheck=st.booleans(),
    ), min_size=1, max_size=12))
    return weights, due, passes


def policy_of(weights: list[int]) -> Weighted:
    return Weighted([(f"q{i}", weight) for i, weight in enumerate(weights)])


def queue_of(job: Job) -> str:
    """The Queue of a job claimed under `policy_of`'s names (to answer a sweep)."""
    return f"q{job[0]}"


def assert_matches_the_reference(
    weights: list[int], due: list[int], passes: list[PassScript], *, remember: bool,
) -> None:
    """Run `passes` on the planner and on the reference, each over its own copy of the
    `due` backlog: every pass's claims and dispatch order, and the credits after it, must
    be the same. Remembering empty Queues, the reference is begun with the Queues the
    planner holds for empty, and every third Queue is limited to one job a claim (a short
    claim of one finds it empty for that pass only, never held)."""
    policy = policy_of(weights)
    new = for_policy(policy, remember_empty=remember)
    assert isinstance(new, WeightedDispatcher)
    old = ReferenceDispatcher(policy)
    new_supply, old_supply = Supply(list(due)), Supply(list(due))
    controlled = frozenset(range(0, len(weights), 3)) if remember else frozenset()
    short_controlled: set[int] = set()
    for script in passes:
        for queue, jobs in script.refill:
            new_supply.due[queue] += jobs
            old_supply.due[queue] += jobs
        plan, first, out = begin_new(new, new_supply, script)
        # (A short claim of a controlled Queue never holds it for empty.)
        assert not out & short_controlled
        if not remember:
            assert out == frozenset()
        got_new = run_pass(plan, policy.queues, new_supply, script, controlled, remember,
                           first)
        got_old = run_pass(old.begin_pass(script.free, out, queue_of), policy.queues,
                           old_supply, script, controlled, remember)
        assert got_new == got_old
        assert new.credits == old.credits
        short_controlled = {queue for queue, limit, got in got_new[0]
                            if queue in controlled and got is not None and got < limit}


@settings(max_examples=400, deadline=None)
@given(scenarios())
# One Queue: drained, found empty, refilled, cut short.
@example(([3], [25], [PassScript(8, None, None, 0, (), False),
                      PassScript(8, 0, None, 2, ((0, 3),), False),
                      PassScript(30, None, None, 5, (), False),
                      PassScript(4, None, 0, 0, ((0, 1),), False),
                      PassScript(4, None, None, 0, (), False)]))
def test_the_planner_makes_the_references_claims_dispatch_order_and_credits(
    scenario: tuple[list[int], list[int], list[PassScript]],
) -> None:
    # Given the same policy, backlog and pass scripts for the planner and the reference
    # When each runs the passes, then the claims, dispatch order and credits are the same
    assert_matches_the_reference(*scenario, remember=False)


@settings(max_examples=300, deadline=None)
@given(scenarios())
@example(([2], [5], [PassScript(8, None, None, 0, (), False),
                     PassScript(8, None, None, 0, ((0, 9),), False),
                     PassScript(8, None, None, 0, (), True),
                     PassScript(8, None, None, 0, (), True)]))
def test_remembering_empty_queues_is_the_reference_with_them_found_empty(
    scenario: tuple[list[int], list[int], list[PassScript]],
) -> None:
    assert_matches_the_reference(*scenario, remember=True)


@settings(max_examples=200, deadline=None)
@given(crowds())
# 40 Queues of one job each, passes of 7: every claim drains its Queue.
@example(([1 + i % 5 for i in range(40)], [1] * 40,
          [PassScript(7, None, None, 0, (), False) for _ in range(8)]))
# 60 tenants, 3 of weight 1 backlogged, the rest empty: the first pass surveys them.
@example(([1 + i % 5 for i in range(60)], [30 if i in (0, 5, 10) else 0 for i in range(60)],
          [PassScript(8, None, None, 0, (), i % 3 == 2) for i in range(10)]))
def test_many_queues_with_few_jobs_remembered_empty_match_the_reference(
    scenario: tuple[list[int], list[int], list[PassScript]],
) -> None:
    assert_matches_the_reference(*scenario, remember=True)


def test_one_step_costs_nothing_per_queue_with_ten_thousand_queues() -> None:
    # Given 10,000 backlogged Queues in five weight tiers
    policy = Weighted([(f"t{i}", 1 + i % 5) for i in range(10_000)])
    dispatcher = for_policy(policy)
    assert isinstance(dispatcher, WeightedDispatcher)
    supply = Supply([UNLIMITED] * 10_000)
    # When 200 passes of 20 run
    served = 0
    for _ in range(200):
        plan: PassPlan[Job] = dispatcher.begin_pass(20)
        _, order = run_pass(plan, policy.queues, supply, PassScript(20, None, None, 0, (), False))
        served += len(order)
    # Then every pass filled, and the heaps hold O(Queues) entries (stale ones dropped)
    assert served == 4000
    assert dispatcher.state.heap_entries() <= 4 * 10_000 + 64
