"""DispatchPolicy, Strict and Weighted as values: spec "The DispatchPolicy type", "Strict",
"Weighted" and "Weight validation", in Python."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

import pytest

import rota
from rota import DispatchPolicy, Strict, Weighted

WEIGHTED_MESSAGE = "Weighted dispatch needs at least one queue, all weights >= 1."
STRICT_MESSAGE = "Strict dispatch needs at least one queue."


@pytest.fixture
def make_weighted() -> Callable[..., Weighted]:
    def factory(*pairs: tuple[str, int]) -> Weighted:
        return Weighted(list(pairs) or [("a", 6), ("b", 3), ("c", 1)])

    return factory


# -- the set is closed --------------------------------------------------------------------


@pytest.mark.parametrize("base", [DispatchPolicy, Strict, Weighted])
def test_no_subclass_can_be_defined_anywhere(base: type) -> None:
    # Given the library's policy classes
    # When user code defines a subclass of any of them
    # Then class creation itself fails with TypeError
    with pytest.raises(TypeError, match="closed"):
        type("Custom", (base,), {})


def test_class_statement_subclass_is_refused() -> None:
    with pytest.raises(TypeError):

        class Fair(DispatchPolicy):  # pragma: no cover - the class body never matters
            pass


def test_dispatch_policy_itself_is_not_constructible() -> None:
    with pytest.raises(TypeError, match="abstract"):
        DispatchPolicy()


def test_the_subtypes_are_nested_and_exported_as_the_same_classes() -> None:
    assert rota.Strict is rota.DispatchPolicy.Strict
    assert rota.Weighted is rota.DispatchPolicy.Weighted
    assert issubclass(Strict, DispatchPolicy) and issubclass(Weighted, DispatchPolicy)


# -- immutable, hashable values ----------------------------------------------------------


@pytest.mark.parametrize(
    "policy", [Strict("a", "b"), Weighted([("a", 6), ("b", 3)])], ids=repr
)
def test_policies_are_immutable(policy: DispatchPolicy) -> None:
    # Given a policy / When any attribute is assigned or deleted / Then it fails
    with pytest.raises(AttributeError):
        policy.queues = ("x",)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        policy.anything = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        del policy._queues  # type: ignore[attr-defined]
    assert not hasattr(policy, "__dict__")


def test_value_equality_and_hashing(make_weighted: Callable[..., Weighted]) -> None:
    # Given policies built separately from equal values
    # Then they are equal, hash alike, and collapse in a set
    assert Strict("a", "b") == Strict("a", "b")
    assert hash(Strict("a", "b")) == hash(Strict("a", "b"))
    assert make_weighted() == make_weighted()
    assert hash(make_weighted()) == hash(make_weighted())
    assert len({Strict("a"), Strict("a"), make_weighted(), make_weighted()}) == 2
    # And order and weights matter
    assert Strict("a", "b") != Strict("b", "a")
    assert Weighted([("a", 1), ("b", 2)]) != Weighted([("a", 2), ("b", 1)])
    assert Weighted([("a", 1), ("b", 2)]) != Weighted([("b", 2), ("a", 1)])


def test_strict_and_weighted_over_the_same_queues_differ() -> None:
    strict = Strict("a", "b")
    weighted = Weighted([("a", 1), ("b", 1)])
    assert strict.queues == weighted.queues
    assert strict != weighted
    assert weighted != strict
    assert strict != ("a", "b")


# -- construction --------------------------------------------------------------------------


def test_strict_queues_is_a_tuple_in_declaration_order() -> None:
    assert Strict("critical", "bulk").queues == ("critical", "bulk")
    assert isinstance(Strict("critical", "bulk").queues, tuple)


def test_strict_varargs_and_one_list_are_equal() -> None:
    assert Strict("a", "b") == Strict(["a", "b"])
    assert Strict("a", "b") == Strict(("a", "b"))
    assert Strict("a") == Strict(["a"])


def test_weighted_queues_are_derived_from_the_weights_in_declaration_order() -> None:
    policy = Weighted([("b", 3), ("a", 6), ("c", 1)])
    assert policy.queues == ("b", "a", "c")
    assert isinstance(policy.queues, tuple)
    assert policy.weights == (("b", 3), ("a", 6), ("c", 1))


def test_weighted_accepts_list_pairs_and_stores_tuples() -> None:
    assert Weighted([["a", 6], ["b", 3]]) == Weighted([("a", 6), ("b", 3)])  # type: ignore[list-item]


def test_weighted_has_no_varargs_form() -> None:
    # There is no params convenience overload: pass one sequence of pairs.
    with pytest.raises(TypeError):
        Weighted(("a", 1), ("b", 2))  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "bad",
    [("a", 1), {"a": 1}, "ab", [("a", "1")], [("a", 1.5)], [("a", True)], [("a",)],
     [(1, 1)], 42],
    ids=repr,
)
def test_weighted_rejects_malformed_input_with_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        Weighted(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [(1,), ("a", 2), ([1],), (None,)], ids=repr)
def test_strict_rejects_non_str_queue_names(bad: tuple[object, ...]) -> None:
    with pytest.raises(TypeError):
        Strict(*bad)  # type: ignore[arg-type]


# -- validation happens at validate() (when a group starts), never at construction --------


@pytest.mark.parametrize(
    "weights", [[], [("a", 0)], [("a", -1)], [("a", 6), ("b", 0)]], ids=repr
)
def test_invalid_weighted_constructs_and_fails_at_validate(
    weights: list[tuple[str, int]],
) -> None:
    # Given an invalid Weighted policy / When it is constructed / Then nothing is raised
    policy = Weighted(weights)
    # When it is validated / Then the exact message
    with pytest.raises(ValueError) as caught:
        policy.validate()
    assert str(caught.value) == WEIGHTED_MESSAGE


def test_empty_strict_constructs_and_fails_at_validate() -> None:
    policy = Strict()
    assert policy.queues == ()
    with pytest.raises(ValueError) as caught:
        policy.validate()
    assert str(caught.value) == STRICT_MESSAGE
    with pytest.raises(ValueError) as caught:
        Strict([]).validate()
    assert str(caught.value) == STRICT_MESSAGE


@pytest.mark.parametrize(
    "policy",
    [Strict("emails", "bulk", "emails"), Weighted([("emails", 1), ("bulk", 2), ("emails", 3)])],
    ids=repr,
)
def test_a_queue_named_twice_is_a_value_error_naming_it(policy: DispatchPolicy) -> None:
    with pytest.raises(ValueError, match="'emails'"):
        policy.validate()


@pytest.mark.parametrize("name", ["", "has space", "tab\there", "x" * 201], ids=repr)
def test_invalid_queue_names_fail_at_validate(name: str) -> None:
    Strict("ok", name)  # constructs
    with pytest.raises(ValueError):
        Strict("ok", name).validate()
    with pytest.raises(ValueError):
        Weighted([("ok", 1), (name, 1)]).validate()


def test_valid_policies_validate_quietly(make_weighted: Callable[..., Weighted]) -> None:
    Strict("a").validate()
    make_weighted().validate()
    Weighted([("x" * 200, 1)]).validate()


# -- pickling and reprs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy",
    [Strict("a", "b"), Strict("a"), Strict(), Weighted([("a", 6), ("b", 3), ("c", 1)]),
     Weighted([])],
    ids=repr,
)
def test_pickle_and_copy_round_trip(policy: DispatchPolicy) -> None:
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        restored = pickle.loads(pickle.dumps(policy, protocol))
        assert restored == policy
        assert type(restored) is type(policy)
        assert restored.queues == policy.queues
    assert copy.deepcopy(policy) == policy


def test_reprs_name_the_nested_type_and_evaluate_back() -> None:
    strict = Strict("critical", "bulk")
    weighted = Weighted([("a", 6), ("b", 3), ("c", 1)])
    assert repr(strict) == "DispatchPolicy.Strict('critical', 'bulk')"
    assert repr(weighted) == "DispatchPolicy.Weighted([('a', 6), ('b', 3), ('c', 1)])"
    namespace = {"DispatchPolicy": DispatchPolicy}
    assert eval(repr(strict), namespace) == strict
    assert eval(repr(weighted), namespace) == weighted


# -- what is at fault: the cause of the exact message -------------------------


def test_weighted_validation_keeps_its_message_and_names_the_queue_and_weight() -> None:
    # Given a Weighted policy with two weights below 1
    policy = Weighted([("a", 2), ("b", 0), ("c", -1)])
    # When it is validated
    with pytest.raises(ValueError, match=r"^Weighted dispatch needs at least one queue, "
                       r"all weights >= 1\.$") as raised:
        policy.validate()
    # Then the message is exactly the specification's, and its cause names each fault
    assert str(raised.value) == WEIGHTED_MESSAGE
    assert str(raised.value.__cause__) == (
        "Queue 'b' has weight 0; Queue 'c' has weight -1 (weights must be whole numbers >= 1)")
    assert not hasattr(raised.value, "__notes__")


def test_an_empty_weighted_policy_says_it_names_no_queue() -> None:
    with pytest.raises(ValueError) as raised:
        Weighted([]).validate()
    assert str(raised.value) == WEIGHTED_MESSAGE
    assert str(raised.value.__cause__) == (
        "Weighted([]) names no Queue; give at least one (queue, weight) pair")


# -- the top of the weight range: the one range of every numeric setting -----------------


@pytest.mark.parametrize("weight", [2**31, 10**26], ids=repr)
def test_a_weight_above_the_range_fails_at_validate_naming_the_queue_and_range(
    weight: int,
) -> None:
    # Given a weight no store column holds / When it is validated
    policy = Weighted([("a", 1), ("b", weight)])
    with pytest.raises(ValueError) as raised:
        policy.validate()
    # Then the message names the Queue, the range and the weight given
    assert str(raised.value) == (
        f"the weight of Queue 'b' must be a whole number from 1 to 2147483647; got {weight}")


def test_the_largest_weight_validates() -> None:
    Weighted([("a", 1), ("b", 2**31 - 1)]).validate()


def test_a_weight_below_1_keeps_the_exact_message_even_beside_a_huge_one() -> None:
    with pytest.raises(ValueError) as raised:
        Weighted([("a", 0), ("b", 10**26)]).validate()
    assert str(raised.value) == WEIGHTED_MESSAGE
