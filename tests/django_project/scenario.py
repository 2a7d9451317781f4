"""Steps of tests/contrib/test_django.py, run as `python scenario.py STEP` in the project.

migrate: Django's migrations and rota's store. place: one order committed with its job and
one rolled back with its job. show: orders and rota's jobs, as JSON."""

import contextlib
import json
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shopsite.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from shop.models import Order  # noqa: E402
from shop.services import PaymentDeclined, place_order  # noqa: E402

from rota.contrib.django import get_app  # noqa: E402

step = sys.argv[1]
if step == "migrate":
    call_command("migrate", verbosity=0)
elif step == "place":
    placed = place_order(99)
    with contextlib.suppress(PaymentDeclined):
        place_order(5, decline=True)
    print(json.dumps({"placed": placed}))
elif step == "show":
    app = get_app()
    jobs = [app.get_job(i) for i in range(1, 10)]
    print(json.dumps({
        "orders": [[o.id, o.total, o.confirmed] for o in Order.objects.order_by("id")],
        "jobs": [[j.name, j.args[0], j.state.value] for j in jobs if j is not None],
    }))
get_app().close()
