"""`rota policy`: show, set and clear a Worker Group's stored policy, on the durable
stores (the policy must outlive the command's process)."""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import rota
from rota.cli import main
from rota.core.workers import WorkerGroupInfo, WorkerInfo
from rota.store import open_store
from rota.store.base import Migratable

WEIGHTED_INVALID = "Weighted dispatch needs at least one queue, all weights >= 1."


@pytest.fixture
def store_url(durable_store_url: str) -> str:
    """A durable store that exists (as once a worker or `rota migrate` has run)."""
    opened = open_store(durable_store_url)
    try:
        assert isinstance(opened, Migratable)
        opened.migrate()
    finally:
        opened.close()
    return durable_store_url


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_set_show_and_clear_through_the_store(
    store_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    store = "--store", store_url
    # Given a store where nothing is stored for "tenants"
    assert main(["policy", "tenants", *store]) == 0
    assert "no policy stored" in capsys.readouterr().out
    # When a Weighted policy is set (forced: no worker of "tenants" has started yet)
    assert main(["policy", "tenants", "--weighted", "a=5,b=1", "--force", *store]) == 0
    assert capsys.readouterr().out == (
        "Worker Group 'tenants': set to Weighted a=5,b=1 (version 1); its running workers "
        "switch at their next pass\n")
    # Then it shows as stored, and an App on the store has it in force
    assert main(["policy", "tenants", *store]) == 0
    assert capsys.readouterr().out == (
        "Worker Group 'tenants': Weighted a=5,b=1 (stored, version 1)\n")
    app = rota.App(store_url)
    try:
        assert app.group_policy("tenants") == rota.Weighted([("a", 5), ("b", 1)])
    finally:
        app.close()
    # And Strict, then a clear, move the version on
    assert run_json(capsys, "policy", "tenants", "--strict", "b,a", *store) == {
        "group": "tenants", "policy": "strict", "queues": ["b", "a"], "weights": None,
        "source": "stored", "version": 2, "unusable": None}
    assert run_json(capsys, "policy", "tenants", "--clear", *store) == {
        "group": "tenants", "policy": None, "source": None}


def test_with_app_it_shows_the_codes_policy_until_one_is_stored(
    store_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = f"fleet_app_{abs(hash(store_url))}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(f"""
        import rota
        app = rota.App({store_url!r})
        app.add_worker_group(rota.WorkerGroupOptions(
            name="tenants", policy=rota.Weighted([("a", 1), ("b", 1)])))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{module}:app"

    def rota_policy(*argv: str) -> int:
        """One command, as its own process would run it: the module imported afresh."""
        try:
            return main(["policy", "tenants", "--app", spec, *argv])
        finally:
            sys.modules.pop(module).app.close()

    assert rota_policy() == 0
    assert capsys.readouterr().out == (
        f"Worker Group 'tenants': Weighted a=1,b=1 (the code's, in {spec})\n")
    assert rota_policy("--weighted", "a=3") == 0
    capsys.readouterr()
    assert rota_policy("--json") == 0
    assert json.loads(capsys.readouterr().out)["source"] == "stored"


@pytest.mark.parametrize(("argv", "message"), [
    (["--weighted", "a=0,b=1"], f"{WEIGHTED_INVALID} (Queue 'a' has weight 0"),
    (["--strict", "a,a"], "Queue 'a' is named twice"),
    (["--weighted", "a=x"], "--weighted: 'x' (for Queue 'a') is not an integer"),
    (["--weighted", "a"], "--weighted takes Queue=number pairs"),
    (["--weighted", f"a=1,b={10**26}"],
     f"the weight of Queue 'b' must be a whole number from 1 to 2147483647; got {10**26}"),
    (["--weighted", "a=2147483648"], "from 1 to 2147483647; got 2147483648"),
    (["--weighted", ""], "--weighted needs Queue=weight pairs, e.g. --weighted a=5,b=1"),
    (["--weighted", " "], "--clear goes back to the policy in the code"),
    (["--strict", ""], "--strict needs Queues, e.g. --strict a,b"),
])
def test_a_bad_policy_is_a_usage_error_and_nothing_is_stored(
    store_url: str, capsys: pytest.CaptureFixture[str], argv: list[str],
    message: str,
) -> None:
    store = "--store", store_url
    assert main(["policy", "tenants", *argv, "--force", *store]) == 2
    assert message in capsys.readouterr().err
    assert main(["policy", "tenants", *store]) == 0
    assert "no policy stored" in capsys.readouterr().out


def test_a_long_policy_is_shown_on_one_line_and_listed_in_full_as_json(
    store_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    store = "--store", store_url
    weights = ",".join(f"t{n}={1 + n % 3}" for n in range(10_000))
    assert main(["policy", "tenants", "--weighted", weights, "--force", *store]) == 0
    capsys.readouterr()
    assert main(["policy", "tenants", *store]) == 0
    assert "... (9980 more) (stored, version 1)" in capsys.readouterr().out
    shown = run_json(capsys, "policy", "tenants", *store)
    assert isinstance(shown, dict) and len(shown["queues"]) == 10_000


def test_flags_are_exclusive_and_the_group_name_is_checked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["policy", "g", "--clear", "--strict", "a", "--store", "memory://"])
    assert exited.value.code == 2
    assert main(["policy", "two words", "--store", "memory://"]) == 2
    assert "Worker Group name" in capsys.readouterr().err


def register(store_url: str, group: str) -> None:
    """A worker row running `group`, as `rota worker` registers it."""
    now = datetime.now(UTC)
    store = open_store(store_url)
    try:
        store.register_worker(WorkerInfo(
            id="host:1:tok", host="host", pid=1, version=rota.__version__, started_at=now,
            last_seen=now, dead_at=now + timedelta(minutes=5),
            groups=(WorkerGroupInfo(name=group, policy=rota.Strict("a"), pool_size=2,
                                    owner=f"{group}@host:1:tok"),)), now)
    finally:
        store.close()


def test_an_unknown_group_is_a_usage_error_naming_the_known_ones_and_force(
    store_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a worker registered running "io"
    register(store_url, "io")
    store = "--store", store_url
    # When a policy is set for a group nobody runs
    assert main(["policy", "oi", "--weighted", "a=1", *store]) == 2
    # Then it is refused, naming the known groups and --force, and nothing is stored
    err = capsys.readouterr().err
    assert "Worker Group 'oi' is not known here" in err
    assert "known groups: 'io'" in err and "--force" in err
    assert main(["policy", "oi", *store]) == 0
    assert "no policy stored" in capsys.readouterr().out
    # And the registered group is set without --force, the unknown one with it
    assert main(["policy", "io", "--strict", "b,a", *store]) == 0
    assert main(["policy", "oi", "--weighted", "a=1", "--force", *store]) == 0
    capsys.readouterr()
    assert run_json(capsys, "policy", "oi", *store)["source"] == "stored"  # type: ignore[index]


def test_force_goes_only_with_a_change(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "g", "--force", "--store", "memory://"]) == 2
    assert "--force goes with --weighted, --strict or --clear" in capsys.readouterr().err
