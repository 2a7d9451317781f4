"""The Django application config of `rota.contrib.django` (label `rota`)."""

from __future__ import annotations

from django.apps import AppConfig


class RotaConfig(AppConfig):
    name = "rota.contrib.django"
    label = "rota"
    verbose_name = "rota background jobs"
