"""`rota worker` usage errors and `rota demo`, as subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def rota_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
           "ROTA_TEST_STORE": "memory://"}
    return subprocess.run([sys.executable, "-m", "rota.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "expected"), [
    (["worker", "no_such_module:app"], "cannot import 'no_such_module'"),
    (["worker", "tests.worker.process_app"], "APP must be module:attribute"),
    (["worker", "tests.worker.process_app:app", "--group", "nope"], "no Worker Group named nope"),
    (["worker", "tests.worker.process_app:app", "--grace", "-1"], "zero or more seconds"),
])
def test_worker_usage_errors_exit_2_with_one_line(args: list[str], expected: str) -> None:
    # When `rota worker` is misused, Then it exits 2 with a one-line message, no traceback
    result = rota_cli(*args)
    assert result.returncode == 2
    assert expected in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_demo_shows_the_shares_against_the_weights(tmp_path: Path) -> None:
    # When the demo runs briefly on its own SQLite file
    result = rota_cli("demo", "--seconds", "2", "--db", str(tmp_path / "demo.db"), cwd=tmp_path)
    # Then it exits 0 and prints the table of shares and the throughput
    assert result.returncode == 0, result.stderr
    assert "Served shares" in result.stdout and "weight 6" in result.stdout
    assert "jobs/s" in result.stdout


def test_demo_tenants_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    # When the tenant demo is asked for one tenant
    result = rota_cli("demo", "--tenants", "1", "--db", str(tmp_path / "demo.db"), cwd=tmp_path)
    # Then it exits 2 naming the range, and makes no file
    assert result.returncode == 2
    assert "argument --tenants: expected a whole number from 2 to 10000; got '1'" in result.stderr
    assert not (tmp_path / "demo.db").exists()


@pytest.mark.slow
def test_demo_tenants_serves_the_small_tenants_beside_the_noisy_one(tmp_path: Path) -> None:
    # When the tenant demo runs 30 tenants briefly, jobs of no work (a noisy tenant's
    # backlog enqueued ahead of 29 small tenants' few jobs each)
    result = rota_cli("demo", "--tenants", "30", "--seconds", "3", "--work-ms", "0",
                      "--db", str(tmp_path / "demo.db"), cwd=tmp_path)
    # Then it exits 0 and prints the table: the noisy tenant and the small ones, each
    # with its share against its weight share, and the time to their first jobs
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Tenants served" in out and "tenant-noisy" in out and "29 small tenants" in out
    assert "weight share" in out and "first job after" in out
    # And every small tenant was served though the noisy backlog was enqueued first
    assert "Every small tenant was served: all 29 had their first job" in out
