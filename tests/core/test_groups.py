"""WorkerGroupOptions: keyword-only, policy required, defaults, durations."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota import RetryPolicy, Strict, WorkerGroupOptions

Options = Callable[..., WorkerGroupOptions]


@pytest.fixture
def make_options() -> Options:
    def factory(**overrides: object) -> WorkerGroupOptions:
        values: dict[str, object] = {"name": "g", "policy": Strict("a")}
        values.update(overrides)
        return WorkerGroupOptions(**values)  # type: ignore[arg-type]

    return factory


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        WorkerGroupOptions("g", Strict("a"))  # type: ignore[misc]


def test_policy_is_required() -> None:
    with pytest.raises(TypeError, match="policy"):
        WorkerGroupOptions(name="g")  # type: ignore[call-arg]


@pytest.mark.parametrize("bad", [None, "a", ("a",), Strict], ids=repr)
def test_policy_must_be_a_dispatch_policy(bad: object, make_options: Options) -> None:
    with pytest.raises(TypeError):
        make_options(policy=bad)


def test_defaults(make_options: Options) -> None:
    options = make_options()
    assert options.pool_size == 20
    assert options.max_claim_batch is None
    assert options.poll_interval == timedelta(seconds=1)
    assert options.lease_duration == timedelta(seconds=60)
    assert options.heartbeat_interval == timedelta(seconds=20)
    assert options.retry == RetryPolicy()
    assert options.claim_capacity == 20


def test_heartbeat_defaults_to_a_third_of_the_lease(make_options: Options) -> None:
    assert make_options(lease_duration=90).heartbeat_interval == timedelta(seconds=30)


@pytest.mark.parametrize(
    "field", ["poll_interval", "lease_duration", "heartbeat_interval"]
)
def test_durations_accept_timedelta_or_seconds(field: str, make_options: Options) -> None:
    from_seconds = make_options(**{field: 5})
    from_float = make_options(**{field: 5.0})
    from_delta = make_options(**{field: timedelta(seconds=5)})
    assert getattr(from_seconds, field) == getattr(from_delta, field) == timedelta(seconds=5)
    assert getattr(from_float, field) == timedelta(seconds=5)


@pytest.mark.parametrize("field", ["poll_interval", "lease_duration", "heartbeat_interval"])
@pytest.mark.parametrize("bad", [0, -1, timedelta(0), timedelta(seconds=-5)], ids=repr)
def test_non_positive_durations_are_value_errors(
    field: str, bad: object, make_options: Options
) -> None:
    with pytest.raises(ValueError, match=field):
        make_options(**{field: bad})


@pytest.mark.parametrize("bad", [0, -1])
def test_pool_size_below_one_is_a_value_error(bad: int, make_options: Options) -> None:
    with pytest.raises(ValueError, match="pool_size"):
        make_options(pool_size=bad)


def test_max_claim_batch_caps_the_claim_capacity(make_options: Options) -> None:
    assert make_options(pool_size=20, max_claim_batch=5).claim_capacity == 5
    assert make_options(pool_size=3, max_claim_batch=5).claim_capacity == 3
    with pytest.raises(ValueError):
        make_options(max_claim_batch=0)


def test_heartbeat_must_be_shorter_than_the_lease(make_options: Options) -> None:
    with pytest.raises(ValueError, match="heartbeat_interval"):
        make_options(lease_duration=10, heartbeat_interval=10)


def test_an_invalid_policy_is_accepted_here_and_validated_when_the_group_starts(
    make_options: Options,
) -> None:
    # Given a Weighted policy with a zero weight / Then the options still construct
    options = make_options(policy=rota.Weighted([("a", 0)]))
    assert options.policy == rota.Weighted([("a", 0)])


def test_options_are_immutable(make_options: Options) -> None:
    options = make_options()
    with pytest.raises(AttributeError):
        options.pool_size = 3  # type: ignore[misc]


@pytest.mark.parametrize("name", ["", " ", "two words", "tab\there", "new\nline", "g" * 201])
def test_a_group_name_must_be_non_empty_without_whitespace(name: str) -> None:
    with pytest.raises(ValueError, match=r"Worker Group name must (be|not)"):
        WorkerGroupOptions(name=name, policy=Strict("a"))


def test_a_group_name_must_be_a_str() -> None:
    with pytest.raises(TypeError, match="must be a str"):
        WorkerGroupOptions(name=5, policy=Strict("a"))  # type: ignore[arg-type]
