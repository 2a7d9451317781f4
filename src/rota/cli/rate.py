"""`rota rate`: see rota.cli.queue_controls."""

from rota.cli.queue_controls import register_rate as register

__all__ = ["register"]
