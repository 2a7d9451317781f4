"""`rota simulate`: the exact claim schedule, from the very core the worker uses."""

from __future__ import annotations

import json

import pytest

from rota.cli import main
from rota.core.policy import Strict, Weighted
from rota.core.simulation import simulate
from tests.core.backlog import nginx_reference


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["simulate", *argv, "--json"]) == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_weighted_6_3_1_prints_the_smooth_sequence_each_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When simulating 6:3:1 with a pool of 10 for 3 passes
    result = run_json(capsys, "--weighted", "a=6,b=3,c=1", "--pool", "10", "--passes", "3")
    # Then each pass claims 6/3/1, one claim per Queue, in the smooth order
    passes = result["passes"]
    assert isinstance(passes, list) and len(passes) == 3
    for one in passes:
        assert one["claims"] == [
            {"queues": ["a"], "limit": 6, "got": 6},
            {"queues": ["b"], "limit": 3, "got": 3},
            {"queues": ["c"], "limit": 1, "got": 1},
        ]
        assert "".join(one["order"]) == "abaabacaba"
    assert result["served"] == {"a": 18, "b": 9, "c": 3}


def test_the_sequence_continues_across_passes_of_any_pool_size() -> None:
    # Given the reference nginx sequence for 5:1:1
    reference = ["abc"[i] for i in nginx_reference([5, 1, 1], 7 * 12)]
    for pool in (1, 2, 3, 5, 7, 11):
        # When passes of that pool size are concatenated
        result = simulate(Weighted([("a", 5), ("b", 1), ("c", 1)]), pool, 84 // pool)
        served = [q for one in result.passes for q in one.order]
        # Then they give the same sequence
        assert served == reference[: len(served)]


def test_backlog_shortfall_reflows_within_the_pass(capsys: pytest.CaptureFixture[str]) -> None:
    # Given only two jobs on "a" and none on "c"
    result = run_json(capsys, "--weighted", "a=6,b=3,c=1", "--pool", "4", "--passes", "1",
                      "--backlog", "a=2,c=0")
    (one,) = result["passes"]  # type: ignore[misc]
    # Then the pass still fills all four slots, b taking what a and c could not
    assert sorted(one["order"]) == ["a", "a", "b", "b"]
    assert len(one["claims"]) <= 2 * 3


def test_strict_serves_the_head_first_then_the_tail() -> None:
    result = simulate(Strict("critical", "bulk"), 5, 3, {"critical": 7})
    assert [len(one.claims) for one in result.passes] == [1, 1, 1]
    assert [list(one.order) for one in result.passes] == [
        ["critical"] * 5, ["critical"] * 2 + ["bulk"] * 3, ["bulk"] * 5,
    ]


def test_table_output_names_the_policy_and_shares(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--weighted", "a=6,b=3,c=1", "--passes", "1"]) == 0
    out = capsys.readouterr().out
    assert "Weighted 6:3:1 over a, b, c, pool 10, 1 pass\n" in out
    assert "order  a b a a b a c a b a" in out
    assert "60.0%" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--weighted", "a=x"], "is not an integer"),
        (["--weighted", "a6"], "Queue=number pairs"),
        (["--weighted", "a=0"], "Weighted dispatch needs at least one queue, all weights >= 1."),
        (["--strict", ""], "Strict dispatch needs at least one queue."),
        (["--weighted", "a=1", "--backlog", "zzz=3"], "does not serve"),
    ],
)
def test_bad_input_is_a_usage_error_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["simulate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_verbosity_flags_are_accepted_after_the_subcommand_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", "--weighted", "a=1", "--passes", "1", "-v", "--json"]) == 0
    assert main(["-vv", "simulate", "--weighted", "a=1", "--passes", "1", "--json"]) == 0
    capsys.readouterr()


def test_a_paused_queue_reflows_and_a_limit_caps_each_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When simulating 6:3:1 with b paused and a limited to 4
    result = run_json(capsys, "--weighted", "a=6,b=3,c=1", "--pool", "10", "--passes", "2",
                      "--paused", "b", "--limit", "a=4")
    # Then every pass asks b and finds nothing, takes 4 of a, and fills the rest from c
    assert result["paused"] == ["b"] and result["limits"] == {"a": 4}
    passes = result["passes"]
    assert isinstance(passes, list)
    for one in passes:
        assert one["claims"][:2] == [{"queues": ["a"], "limit": 6, "got": 4},
                                     {"queues": ["b"], "limit": 3, "got": 0}]
        assert sorted(one["order"]) == ["a"] * 4 + ["c"] * 6
    assert result["served"] == {"a": 8, "b": 0, "c": 12}


def test_the_text_schedule_names_the_controls(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--strict", "a,b,c", "--pool", "5", "--passes", "1",
                 "--paused", "c", "--limit", "a=1"]) == 0
    out = capsys.readouterr().out
    assert "Strict a > b > c, pool 5, 1 pass, paused c, limit a=1" in out
    assert "order  a b b b b" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--paused", "z"], "paused names Queue 'z'"),
        (["--limit", "a=-1"], "from 0 to 2147483647"),
        (["--limit", "a=many"], "is not an integer"),
        (["--limit", "z=1"], "limit names Queue 'z'"),
    ],
)
def test_bad_controls_are_one_line_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--strict", "a,b", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_json_lists_each_round_trip_as_the_store_receives_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given 6:3:1, pool 7, and a 20, b 9, c 0 due jobs
    result = run_json(capsys, "--weighted", "a=6,b=3,c=1", "--pool", "7", "--passes", "7",
                      "--backlog", "a=20,b=9,c=0")
    passes = result["passes"]
    assert isinstance(passes, list)
    # Then the first pass's first round trip asks a 4, b 2, c 1 in one call probing all
    # three, and its answer names the Queues with due work left; c came back empty, so
    # the second round trip asks a alone for c's slot
    first = passes[0]["round_trips"]
    assert first[0] == {
        "claims": [{"queues": ["a"], "limit": 4, "got": 4},
                   {"queues": ["b"], "limit": 2, "got": 2},
                   {"queues": ["c"], "limit": 1, "got": 0}],
        "probe": ["a", "b", "c"], "due": ["a", "b"]}
    assert first[1] == {"claims": [{"queues": ["a"], "limit": 1, "got": 1}],
                        "probe": ["a"], "due": ["a"]}
    # And the pass's claims list is its round trips' claims in order
    for one in passes:
        assert one["claims"] == [c for trip in one["round_trips"] for c in trip["claims"]]
    # And once a claim's probe said b has no due job left, no claim asks b again (the
    # worker knows it is empty): pass 5 asks a alone, and the last pass, after one that
    # claimed nothing, is a probe alone of the Queues held for empty
    assert passes[4]["claims"] == [{"queues": ["a"], "limit": 7, "got": 1}]
    assert passes[6]["round_trips"] == [
        {"claims": [], "probe": ["a", "b", "c"], "due": []}]


def test_the_text_schedule_shows_a_passs_probe(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--weighted", "a=6,b=3,c=1", "--pool", "7", "--passes", "7",
                 "--backlog", "a=20,b=9,c=0"]) == 0
    out = capsys.readouterr().out
    assert "pass 5: claims 7 from a (got 1)" in out
    assert "pass 7: probes a,b,c (due: none)" in out


def test_a_rated_queue_is_served_within_its_rate_and_the_schedule_says_when_it_starved(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When a=1,b=1 over a pool of 4 is simulated with a rated 6 a minute (burst 2), a pass
    # every 5 s, for a minute
    assert main(["simulate", "--weighted", "a=1,b=1", "--pool", "4", "--passes", "12",
                 "--rate", "a=6/1m", "--burst", "a=2", "--pass-every", "5s"]) == 0
    out = capsys.readouterr().out
    # Then the header names the rate and the time step, each pass its time, a pass without
    # a's token its b-only order, and the end a's share against its bound
    assert ("Weighted 1:1 over a, b, pool 4, 12 passes, rate a=6/1m (burst 2), a pass "
            "every 5 s\n") in out
    assert "pass 1 at +0 s: claims 2 from a, 2 from b\n        order  a b a b\n" in out
    assert ("pass 2 at +5 s: claims 2 from a (got 0), 2 from b, 2 from b\n"
            "        order  b b b b\n        out of tokens a\n") in out
    assert ("a: rate 6/1m (burst 2), served 7 over 55 s, at most 2 + 6 * 55 / 60 = 7\n"
            "  out of tokens in 11 passes: +5 s to +55 s\n") in out


def test_the_json_gives_each_passs_time_and_the_queues_out_of_tokens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When Strict a > b is simulated with a rated 1 per 10 s (a bare number is seconds),
    # a pass every 4 s
    result = run_json(capsys, "--strict", "a,b", "--pool", "2", "--passes", "4",
                      "--rate", "a=1/10", "--pass-every", "4")
    # Then a gets its one token at 0 s, then none until 10 s; b takes its slots
    assert result["rates"] == {"a": {"jobs": 1, "per_s": 10.0, "burst": 1}}
    assert result["pass_every_s"] == 4.0
    passes = result["passes"]
    assert isinstance(passes, list)
    assert [(p["at_s"], p["order"], p["out_of_tokens"]) for p in passes] == [
        (0.0, ["a", "b"], ["a"]), (4.0, ["b", "b"], ["a"]), (8.0, ["b", "b"], ["a"]),
        (12.0, ["a", "b"], ["a"])]
    assert result["served"] == {"a": 2, "b": 6}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rate", "a=10"], "--rate of Queue 'a': '10' is not a rate; expected N/PERIOD"),
        (["--rate", "a"], "--rate takes Queue=N/PERIOD pairs"),
        (["--rate", "z=1/1m"], "rate names Queue 'z'"),
        (["--rate", "a=0/1m"], "jobs must be a whole number from 1"),
        (["--rate", "a=1/1m", "--burst", "a=0"], "burst must be a whole number from 1"),
        (["--rate", "a=1/1m", "--burst", "b=3"], "--burst names Queue 'b', which has no"),
        (["--pass-every", "soon"], "--pass-every: 'soon' is not a duration"),
        (["--pass-every=-1s"], "--pass-every: '-1s' is not a duration"),
    ],
)
def test_bad_rates_are_one_line_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--strict", "a,b", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
