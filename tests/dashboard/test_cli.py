"""`rota dashboard` as a real process, its errors, and the extra staying optional."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

import rota
from rota.cli import main

ROOT = Path(__file__).resolve().parents[2]


def rota_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("ROTA_STORE", None)
    env.pop("ROTA_DASHBOARD_TOKEN", None)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_rota_dashboard_serves_the_store_until_a_signal(
    durable_store_url: str, stop: signal.Signals
) -> None:
    # Given a store with one job
    app = rota.App(durable_store_url)
    try:
        @app.job("hello", queue="greetings")
        def hello() -> None: ...

        hello.enqueue()
    finally:
        app.close()
    # When `rota dashboard` starts on a free port
    with subprocess.Popen(
        [sys.executable, "-m", "rota.cli", "dashboard", "--store", durable_store_url,
         "--port", "0", "--token", "t"],
        env=rota_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        try:
            # Then it says where, bound to 127.0.0.1 by default, and answers there
            assert first.startswith("rota dashboard: serving ") and "(actions need the token)" \
                in first, first + (process.stderr.read() if process.stderr else "")
            url = first.split(" at ")[1].split()[0]
            assert url.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(f"{url}api/queues", timeout=30) as reply:
                queues = json.loads(reply.read())
            assert [(q["name"], q["counts"]["scheduled"]) for q in queues] == [("greetings", 1)]
        finally:
            # And SIGINT or SIGTERM stops it cleanly
            process.send_signal(stop)
            assert process.wait(timeout=60) == 0


@pytest.mark.slow
@pytest.mark.parametrize(("host", "token", "warned"), [
    ("0.0.0.0", None, True), ("127.0.0.1", None, False), ("0.0.0.0", "t", False),
])
def test_listening_beyond_this_machine_without_a_token_warns(
    host: str, token: str | None, warned: bool
) -> None:
    argv = [sys.executable, "-m", "rota.cli", "dashboard", "--store", "memory://",
            "--host", host, "--port", "0", *(["--token", token] if token else [])]
    with subprocess.Popen(argv, env=rota_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None and process.stderr is not None
        try:
            # The warning comes before the line saying where it serves
            assert process.stdout.readline().startswith("rota dashboard: serving ")
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0
        err = process.stderr.read()
    assert ("warning: listening on 0.0.0.0 without a token" in err) is warned, err
    assert "Pass --token" in err if warned else err == ""


def test_without_the_extra_it_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import rota.dashboard

    monkeypatch.setattr(rota.dashboard, "missing_modules", lambda: ["starlette"])
    assert main(["dashboard", "--store", "memory://"]) == 1
    err = capsys.readouterr().err
    assert err == "rota dashboard: the dashboard needs its extra: pip install " \
        "'rota[dashboard]'\n"
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'rota\[dashboard\]'"):
        rota.dashboard.create_app("memory://")


def test_import_rota_loads_none_of_the_extra() -> None:
    code = ("import sys, rota, rota.cli; rota.cli.build_parser(); "
            "print(sorted(m for m in ('starlette', 'uvicorn', 'jinja2', 'prometheus_client', "
            "'selenium') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=rota_env(), capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("argv", "words", "code"), [
    (["--store", "sqlite:///{tmp}/missing.db"], "does not exist", 2),
    (["--store", "nonsense://x"], "is not one rota knows", 2),
    (["--store", "memory://", "--port", "70000"], "a port is a whole number", 2),
    (["--store", "memory://", "--token", " "], "--token must not be empty", 2),
    (["--store", "memory://", "--app", "x:y"], "give --store or --app, not both", 2),
    ([], "no store given", 2),
])
def test_usage_errors_are_one_line(
    tmp_path: Path, argv: list[str], words: str, code: int
) -> None:
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    result = subprocess.run([sys.executable, "-m", "rota.cli", "dashboard", *argv],
                            env=rota_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == code, result.stderr
    assert words in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "missing.db").exists()  # a read-only open never creates it
