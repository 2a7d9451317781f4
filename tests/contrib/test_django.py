"""rota.contrib.django with a real minimal Django project (tests/django_project), on SQLite
and PostgreSQL: settings, transaction.atomic() enqueue, `manage.py rota_worker` as a
subprocess, and Django's own TestCase driving `run_until_idle`.

Django's settings are global to a process, so every step runs in a child process."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytest.importorskip("django")

from tests.conftest import POSTGRES_URL

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "django_project"


@pytest.fixture(params=["sqlite", "postgres"])
def project_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of the project's processes, on a fresh database of each kind."""
    env = {key: value for key, value in os.environ.items()
           if key not in {"ROTA_STORE", "DJANGO_SETTINGS_MODULE"}}
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT), str(ROOT / "src"), str(ROOT)])
    if request.param == "sqlite":
        yield {**env, "ROTA_DJANGO_DB": f"sqlite:{tmp_path / 'shop.db'}"}
        return
    from tests.pg import fresh_postgres_url

    for url in fresh_postgres_url(POSTGRES_URL, request.node.name):
        yield {**env, "ROTA_DJANGO_DB": f"postgres:{urlsplit(url).path.lstrip('/')}"}


def step(env: dict[str, str], *argv: str) -> str:
    done = subprocess.run([sys.executable, *argv], cwd=PROJECT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
    return done.stdout


def show(env: dict[str, str]) -> dict[str, list[list[object]]]:
    return json.loads(step(env, "scenario.py", "show"))  # type: ignore[no-any-return]


def test_enqueue_in_atomic_commits_with_the_order_and_the_worker_command_runs_it(
    project_env: dict[str, str],
) -> None:
    # Given the project's database migrated (Django's tables and rota's)
    step(project_env, "scenario.py", "migrate")
    # When one order commits with its job and another is rolled back with its job
    placed = json.loads(step(project_env, "scenario.py", "place"))["placed"]
    # Then only the committed order and its job exist
    state = show(project_env)
    assert state["orders"] == [[placed, 99, False]]
    assert state["jobs"] == [["confirm-order", placed, "scheduled"]]
    # When `manage.py rota_worker` runs until the job is done, then gets SIGTERM
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "rota_worker", "--verbosity", "3", "--grace", "5"],
        cwd=PROJECT, env=project_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        assert worker.stderr is not None
        for text in worker.stderr:
            seen.append(text)
            lines.put(text)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        while True:
            try:
                text = lines.get(timeout=60)
            except queue.Empty:
                pytest.fail("the worker never recorded the job:\n" + "".join(seen))
            if "(confirm-order) attempt 1 recorded: succeeded" in text:
                break
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0, "".join(seen)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
        reader.join(10)
        if worker.stderr is not None:
            worker.stderr.close()
    # Then the handler used the ORM: the order is confirmed, and the job succeeded
    state = show(project_env)
    assert state["orders"] == [[placed, 99, True]]
    assert state["jobs"] == [["confirm-order", placed, "succeeded"]]
    assert any("rota worker: running shop on" in text for text in seen)


def test_djangos_testcase_drives_jobs_with_run_until_idle(
    project_env: dict[str, str],
) -> None:
    # When the project's own Django tests run (TestCase, rota on memory:// there)
    done = subprocess.run([sys.executable, "manage.py", "test", "shop", "--noinput"],
                          cwd=PROJECT, env=project_env, capture_output=True, text=True,
                          timeout=300, check=False)
    # Then they pass: handlers ran on the test's thread, inside its transaction, with the ORM
    assert done.returncode == 0, done.stderr
    assert "Ran 2 tests" in done.stderr and "OK" in done.stderr


def test_settings_give_the_store_url() -> None:
    # Given Django settings configured in a child (they are global to a process)
    code = (
        "import django\n"
        "from django.conf import settings\n"
        "settings.configure(DATABASES={\n"
        "  'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': 'rel/site.db'},\n"
        "  'pg': {'ENGINE': 'django.db.backends.postgresql', 'NAME': 'shop', 'USER': 'u',\n"
        "         'PASSWORD': 'p@ss:w/rd', 'HOST': 'db.internal', 'PORT': 5433},\n"
        "  'mem': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': ':memory:'},\n"
        "  'my': {'ENGINE': 'django.db.backends.mysql', 'NAME': 'x'}},\n"
        "  ROTA={'DATABASE': 'default'})\n"
        "django.setup()\n"
        "import os\n"
        "from django.core.exceptions import ImproperlyConfigured\n"
        "from rota.contrib.django import store_url\n"
        "print(store_url() == 'sqlite:///' + os.path.abspath('rel/site.db'))\n"
        "settings.ROTA = {'DATABASE': 'pg'}\n"
        "print(store_url())\n"
        "for alias in ('mem', 'my', 'nope'):\n"
        "    settings.ROTA = {'DATABASE': alias}\n"
        "    try:\n"
        "        store_url()\n"
        "    except ImproperlyConfigured as error:\n"
        "        print(str(error).split(';')[0].split(',')[0])\n"
        "settings.ROTA = {'STORE': 'memory://', 'TYPO': 1}\n"
        "try:\n"
        "    store_url()\n"
        "except ImproperlyConfigured as error:\n"
        "    print(error)\n"
        "settings.ROTA = {'STORE': 'memory://'}\n"
        "print(store_url())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "True",
        "postgresql://u:p%40ss%3Aw%2Frd@db.internal:5433/shop",
        "database 'mem' is an in-memory SQLite database",
        "database 'my' uses 'django.db.backends.mysql'",
        "settings.ROTA['DATABASE'] is 'nope'",
        "settings.ROTA has unknown key(s) ['TYPO']; it takes ['APP', 'DATABASE', 'STORE']",
        "memory://",
    ]
