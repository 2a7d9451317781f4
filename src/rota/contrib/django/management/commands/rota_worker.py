"""`manage.py rota_worker [--group NAME] [--grace SECONDS]`: `rota worker` for the App of
`settings.ROTA["APP"]`, with Django set up (settings, apps, database connections)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from rota.contrib.django import get_app, rota_settings


class Command(BaseCommand):
    help = ("Run the Worker Groups of settings.ROTA['APP'] until SIGINT/SIGTERM (graceful; "
            "a second signal exits at once), as `rota worker` does.")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--group", action="append", dest="groups", metavar="NAME",
                            help="run only this Worker Group (repeatable); default: all")
        parser.add_argument("--grace", metavar="SECONDS",
                            help="how long running jobs may finish at shutdown")

    def handle(self, *args: Any, **options: Any) -> None:
        from rota.cli import main

        get_app()  # fail early, as a Django CommandError, on a bad ROTA['APP']
        argv = ["worker", str(rota_settings()["APP"])]
        for group in options["groups"] or ():
            argv += ["--group", group]
        if options["grace"] is not None:
            argv += ["--grace", options["grace"]]
        verbosity = int(options.get("verbosity", 1))
        if verbosity >= 2:
            argv.insert(0, "-v" if verbosity == 2 else "-vv")
        code = main(argv)
        if code:
            sys.stderr.flush()
            raise CommandError(f"rota worker exited with {code}", returncode=code)
