"""Hostile names through every `rota` command, on SQLite and PostgreSQL.

The guarantee (docs/reliability.md): user text is data, never code or markup. Whatever a
name holds (SQL metacharacters, rich markup, any Unicode, 10,000 characters, NUL), every
command either refuses it cleanly (a one-line message, exit 2 or 1, nothing stored) or
stores it exactly and shows it exactly; no command injects it into SQL or crashes.

The commands run in this process through `rota.cli.main` (the `rota` entry point), so a
crash shows up as the exception a user would see as a traceback, and a NUL character,
which no real argv can carry, can be tried too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobState
from tests.chaos.conftest import Supervisor, chaos_env, raw_sql, run_cli, state_counts
from tests.waiting import wait_until

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Hostile:
    id: str
    text: str
    queue_ok: bool  # a valid Queue name (no whitespace or control character, <= 200)
    job_name_ok: bool  # a valid job name (1-200 printable characters, spaces allowed)


HOSTILE = [
    Hostile("sql", "'; DROP TABLE rota_jobs; --", False, True),
    Hostile("sql-pg", 'x"; DROP TABLE rota.jobs; --\\', False, True),
    Hostile("markup-tag", "[bold]x[/]", True, True),
    Hostile("markup-open", "a[b", True, True),
    Hostile("markup-close", "x[/bold]", True, True),
    Hostile("unicode", "zürich-队列-🚀-ﬁ-שלום-\u0301é", True, True),
    Hostile("long", "n" * 10_000, False, False),
    Hostile("nul", "a\x00b", False, False),
]
BY_ID = {hostile.id: hostile for hostile in HOSTILE}


def cases() -> list[object]:
    """pytest params over the hostile names, each with its id."""
    return [pytest.param(hostile, id=hostile.id) for hostile in HOSTILE]


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tables as wide as the longest name, so a shown name is never wrapped.
    monkeypatch.setenv("COLUMNS", "50000")


def refused_cleanly(code: int, err: str, command: str) -> bool:
    lines = err.strip().splitlines()
    return (code in (1, 2) and "Traceback" not in err and bool(lines)
            and lines[-1].startswith(f"rota {command}"))


def jobs_table_rows(store_url: str) -> int:
    ((count,),) = raw_sql(store_url, "SELECT count(*) FROM {jobs}")
    assert isinstance(count, int)
    return count


def tables_intact(store_url: str) -> None:
    # the jobs table is still there (no injected DROP) and answers queries
    jobs_table_rows(store_url)


# -- enqueue NAME: the job name -------------------------------------------------------


@pytest.mark.parametrize("hostile", cases())
def test_a_hostile_job_name_is_stored_and_shown_exactly_or_refused(
    hostile: Hostile, durable_store_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a store
    run_cli(capsys, "migrate", "--store", durable_store_url)
    # When a job with the hostile name is enqueued from the shell
    code, out, err = run_cli(capsys, "enqueue", hostile.text, "--queue", "default",
                             "--store", durable_store_url)
    tables_intact(durable_store_url)
    if not hostile.job_name_ok:
        # Then a name breaking the job-name rule (1-200 printable characters: a NUL, or
        # 10,000 characters) is refused on every store, before anything is stored
        assert refused_cleanly(code, err, "enqueue"), (code, err)
        assert jobs_table_rows(durable_store_url) == 0
        return
    # Then it is stored exactly, and `rota jobs` and `rota queues` show it exactly
    assert code == 0, err
    job_id = int(out)
    code, out, err = run_cli(capsys, "jobs", "--store", durable_store_url, "--json")
    assert code == 0, err
    assert [(job["id"], job["name"]) for job in json.loads(out)] == [(job_id, hostile.text)]
    code, out, err = run_cli(capsys, "jobs", "--store", durable_store_url)
    assert code == 0, err
    assert hostile.text in out
    code, out, err = run_cli(capsys, "queues", "--store", durable_store_url)
    assert code == 0, err


# -- enqueue --queue NAME, then queues and jobs --queue --------------------------------


@pytest.mark.parametrize("hostile", cases())
def test_a_hostile_queue_name_is_stored_and_shown_exactly_or_refused(
    hostile: Hostile, durable_store_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    run_cli(capsys, "migrate", "--store", durable_store_url)
    # When a job is enqueued on a Queue with the hostile name
    code, out, err = run_cli(capsys, "enqueue", "work", "--queue", hostile.text,
                             "--store", durable_store_url)
    tables_intact(durable_store_url)
    if not hostile.queue_ok:
        # Then an invalid Queue name is refused, nothing stored
        assert refused_cleanly(code, err, "enqueue"), (code, err)
        assert jobs_table_rows(durable_store_url) == 0
        return
    # Then it is stored, and `rota queues` / `rota jobs --queue` show it exactly
    assert code == 0, err
    code, out, err = run_cli(capsys, "queues", "--store", durable_store_url, "--json")
    assert code == 0, err
    assert [queue["name"] for queue in json.loads(out)] == [hostile.text]
    code, out, err = run_cli(capsys, "queues", "--store", durable_store_url)
    assert code == 0, err
    assert hostile.text in out
    code, out, err = run_cli(capsys, "jobs", "--queue", hostile.text, "--store",
                             durable_store_url, "--json")
    assert code == 0, err
    assert [job["queue"] for job in json.loads(out)] == [hostile.text]
    code, out, err = run_cli(capsys, "jobs", "--queue", hostile.text, "--store",
                             durable_store_url)
    assert code == 0, err
    assert hostile.text in out


# -- filters and ids that match nothing --------------------------------------------------


@pytest.mark.parametrize("hostile", cases())
def test_a_hostile_queue_filter_matches_nothing_or_is_refused(
    hostile: Hostile, durable_store_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a store holding one ordinary job
    code, _, err = run_cli(capsys, "enqueue", "work", "--queue", "default", "--store",
                           durable_store_url)
    assert code == 0, err
    # When `rota jobs --queue` filters on the hostile name
    code, out, err = run_cli(capsys, "jobs", "--queue", hostile.text, "--store",
                             durable_store_url, "--json")
    # Then it lists nothing (the name is a parameter, not SQL) or refuses it cleanly
    assert (code == 0 and json.loads(out) == []) or refused_cleanly(code, err, "jobs"), err
    assert jobs_table_rows(durable_store_url) == 1


@pytest.mark.parametrize("hostile", cases())
def test_cancel_refuses_a_hostile_id_cleanly(
    hostile: Hostile, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    code, _, err = run_cli(capsys, "cancel", hostile.text, "--store",
                           f"sqlite:///{tmp_path / 'rota.db'}")
    assert refused_cleanly(code, err, "cancel"), (code, err)


@pytest.mark.parametrize("hostile", cases())
def test_worker_refuses_a_hostile_app_or_group_cleanly(
    hostile: Hostile, capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["worker", hostile.text],
                 ["worker", f"tests.chaos.hostile_app:{hostile.text}"],
                 ["worker", "tests.chaos.hostile_app:app", "--group", hostile.text]):
        code, _, err = run_cli(capsys, *argv)
        assert refused_cleanly(code, err, "worker"), (argv[1:], code, err)


@pytest.mark.parametrize("argv", [
    ["cancel", "99999999999999999999"],
    ["cancel", "-5"],
    ["enqueue", "work", "--queue", "default", "--delay", "1e12"],
    ["enqueue", "work", "--queue", "default", "--delay", "-1"],
    ["jobs", "--limit", "99999999999999999999"],
], ids=["cancel-huge-id", "cancel-negative-id", "enqueue-huge-delay", "enqueue-negative-delay",
        "jobs-huge-limit"])
def test_hostile_numbers_are_refused_cleanly(
    argv: list[str], durable_store_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    run_cli(capsys, "migrate", "--store", durable_store_url)
    code, _, err = run_cli(capsys, *argv, "--store", durable_store_url)
    tables_intact(durable_store_url)
    assert code == 0 or refused_cleanly(code, err, argv[0]), (code, err)
    assert jobs_table_rows(durable_store_url) == 0


# -- end to end: hostile jobs through a real worker, then the read commands -------------


@pytest.fixture
def reader(durable_store_url: str) -> Iterator[rota.App]:
    app = rota.App(durable_store_url)
    yield app
    app.close()


def test_hostile_jobs_run_through_a_worker_are_quarantined_and_shown(
    durable_store_url: str, reader: rota.App, supervisors: Callable[..., Supervisor],
    capsys: pytest.CaptureFixture[str], chaos_figures: Callable[..., None],
) -> None:
    # Given one job per storable hostile name (unknown to the worker's App), one of them
    # cancelled from the shell by id
    names = [h.text for h in HOSTILE if h.job_name_ok]
    ids = []
    for name in names:
        code, out, err = run_cli(capsys, "enqueue", name, "--queue", "default", "--store",
                                 durable_store_url)
        assert code == 0, err
        ids.append(int(out))
    code, out, err = run_cli(capsys, "cancel", str(ids[0]), "--store", durable_store_url)
    assert (code, out.strip()) == (0, f"{ids[0]} cancelled"), err
    # When a real worker runs them
    supervisor = supervisors(chaos_env(durable_store_url), 1)
    began = time.monotonic()
    assert wait_until(lambda: state_counts(reader)[JobState.QUARANTINED] == len(names) - 1,
                      60, tick=supervisor.check), supervisor.stderr()
    took_s = time.monotonic() - began
    assert supervisor.stop() == [0], supervisor.stderr()
    # Then each is quarantined with its name in last_error, the tables are intact, and
    # `rota jobs` / `rota queues` show every name and error exactly
    tables_intact(durable_store_url)
    code, out, err = run_cli(capsys, "jobs", "--store", durable_store_url, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert [job["name"] for job in shown] == names
    assert [job["state"] for job in shown] == ["cancelled"] + ["quarantined"] * (len(ids) - 1)
    for job in shown[1:]:
        assert job["name"] in job["last_error"]
    code, out, err = run_cli(capsys, "queues", "--store", durable_store_url)
    assert code == 0, err
    chaos_figures(f"hostile-names[{durable_store_url.split(':')[0]}]", jobs=len(ids),
                  quarantined=len(ids) - 1, cancelled=1, took_s=round(took_s, 1))
    code, out, err = run_cli(capsys, "jobs", "--store", durable_store_url)
    assert code == 0, err
    for job in shown:
        assert job["name"] in out
        assert (job["last_error"] or "") in out
