"""Settings of the test shop. The database comes from ROTA_DJANGO_DB:
`sqlite:/abs/path.db` or `postgres:DBNAME` (PostgreSQL at 127.0.0.1:5432, user postgres).
Under `manage.py test` the jobs go to a memory:// store (Django's TestCase runs each test
in a transaction that rota's own connection could not see)."""

import os
import sys

SECRET_KEY = "rota-tests-only"
DEBUG = False
USE_TZ = True
ALLOWED_HOSTS: list[str] = []
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = ["rota.contrib.django", "shop"]

_kind, _, _where = os.environ.get("ROTA_DJANGO_DB", "sqlite:/tmp/rota-shop.db").partition(":")
if _kind == "postgres":
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.postgresql", "NAME": _where, "USER": "postgres",
        "HOST": "127.0.0.1", "PORT": "5432",
    }}
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": _where}}

ROTA = {"APP": "shop.jobs:app"}
if len(sys.argv) > 1 and sys.argv[1] == "test":
    ROTA["STORE"] = "memory://"
