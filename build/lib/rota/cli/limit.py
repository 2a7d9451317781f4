"""`rota limit`: see rota.cli.queue_controls."""

from rota.cli.queue_controls import register_limit as register

__all__ = ["register"]
