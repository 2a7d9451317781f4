"""`rota enqueue`: the argument check with --app (exit 2, one line, nothing stored), unique
jobs with --key, and `rota requeue` of a job whose key a live job holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rota.cli import main


def test_enqueue_with_app_checks_the_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an App module whose job takes one argument
    db = tmp_path / "app.db"
    (tmp_path / "cli_argument_check_app.py").write_text(
        "import rota\n"
        f"app = rota.App('sqlite:///{db}')\n"
        "@app.job('greet', queue='hello')\n"
        "def greet(name: str, *, loud: bool = False) -> None: ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("ROTA_STORE", raising=False)
    app = "cli_argument_check_app:app"
    # When the arguments do not fit: one line, exit 2
    assert main(["enqueue", "greet", "a", "b", "--app", app]) == 2
    err = capsys.readouterr().err
    assert "job 'greet'" in err and "too many positional arguments" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert main(["enqueue", "greet", "a", "--kwargs", '{"shout": true}', "--app", app]) == 2
    assert "unexpected keyword argument 'shout'" in capsys.readouterr().err
    # Then nothing was stored; arguments that fit are
    assert main(["enqueue", "greet", "a", "--kwargs", '{"loud": true}', "--app", app]) == 0
    capsys.readouterr()
    assert main(["jobs", "--app", app, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [job["args"] for job in listed] == [["a"]]


def test_enqueue_with_app_validates_a_dataclass_argument_and_stores_its_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an App module whose job takes a dataclass
    db = tmp_path / "app.db"
    (tmp_path / "cli_typed_app.py").write_text(
        "from dataclasses import dataclass\n"
        "import rota\n"
        f"app = rota.App('sqlite:///{db}')\n"
        "@dataclass\nclass Order:\n    id: int\n    rush: bool = False\n"
        "@app.job('ship', queue='orders')\n"
        "def ship(order: Order) -> None: ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("ROTA_STORE", raising=False)
    app = "cli_typed_app:app"
    # When its argument misses a field: one line naming it, exit 2, nothing stored
    assert main(["enqueue", "ship", "--kwargs", '{"order": {"rush": true}}', "--app", app]) == 2
    err = capsys.readouterr().err
    assert "argument 'order': Order is missing the field(s) 'id'" in err
    assert err.count("\n") == 1
    # Then a fitting one is stored as the dataclass's JSON, defaults filled in
    assert main(["enqueue", "ship", "--kwargs", '{"order": {"id": 3}}', "--app", app]) == 0
    capsys.readouterr()
    assert main(["jobs", "--app", app, "--json"]) == 0
    assert [job["kwargs"] for job in json.loads(capsys.readouterr().out)] == [
        {"order": {"id": 3, "rush": False}}]


def test_enqueue_key_prints_the_live_jobs_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ROTA_STORE", raising=False)
    store = ["--store", f"sqlite:///{tmp_path / 'rota.db'}"]
    assert main(["enqueue", "charge", "42", "--key", "order-42", *store,
                 "--queue", "payments"]) == 0
    first = capsys.readouterr().out
    assert main(["enqueue", "charge", "43", "--key", "order-42", *store,
                 "--queue", "payments"]) == 0
    assert capsys.readouterr().out == first
    assert main(["job", first.strip(), "--json", *store]) == 0
    assert json.loads(capsys.readouterr().out)["key"] == "order-42"
    assert main(["enqueue", "charge", "--key", "", *store, "--queue", "payments"]) == 2
    assert "job key must be non-empty" in capsys.readouterr().err


def test_requeue_refused_for_a_taken_key_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ROTA_STORE", raising=False)
    store = ["--store", f"sqlite:///{tmp_path / 'rota.db'}"]
    assert main(["enqueue", "charge", "--key", "k", *store, "--queue", "payments"]) == 0
    first = capsys.readouterr().out.strip()
    assert main(["cancel", first, *store]) == 0
    assert main(["enqueue", "charge", "--key", "k", *store, "--queue", "payments"]) == 0
    capsys.readouterr()
    assert main(["requeue", first, *store]) == 1
    assert "a live job already holds its key 'k'" in capsys.readouterr().err
