"""`rota demo --db` recreates only a file it made itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.cli import main
from rota.store import open_store


def test_demo_refuses_to_overwrite_a_file_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a user's notes and a user's real store
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    store_file = tmp_path / "precious.db"
    store = open_store(f"sqlite:///{store_file}")
    store.close()
    for path in (notes, store_file):
        # When the demo is pointed at them
        assert main(["demo", "--db", str(path), "--seconds", "0.2"]) == 2
        # Then it refuses, in one line, and leaves them alone
        err = capsys.readouterr().err
        assert "is not a database made by rota demo; refusing to overwrite it" in err
    assert notes.read_text() == "my notes"


def test_demo_reruns_on_its_own_file_and_reports_bad_paths_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db), "--seconds", "0.3"]) == 0
    assert main(["demo", "--db", str(db), "--seconds", "0.3"]) == 0  # recreated
    capsys.readouterr()
    for bad, message in ((tmp_path, "is a directory"),
                         (tmp_path / "missing" / "x.db", "does not exist")):
        assert main(["demo", "--db", str(bad), "--seconds", "0.3"]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_the_demo_file_keeps_the_runs_served_shares_after_its_workers_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a finished demo run (its workers have stopped)
    import rota

    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db), "--seconds", "0.5"]) == 0
    capsys.readouterr()
    app = rota.App(f"sqlite:///{db}")
    try:
        # Then the store holds no worker, but every job the run finished is in the
        # history, with each group's policy to set the shares against
        assert app.workers() == []
        views = {view.group: view for view in app.fairness(3600)}
        finished = sum(count for (_, state), count in app.store.count_jobs().items()
                       if state is rota.JobState.SUCCEEDED)
        assert finished > 0
        assert views["fair"].served + views["priority"].served == finished
        assert [(q.queue, q.weight) for q in views["fair"].queues] == [
            ("a", 6), ("b", 3), ("c", 1)]
        assert views["priority"].policy == rota.Strict("critical", "bulk")
    finally:
        app.close()
