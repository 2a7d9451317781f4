"""`rota resume`: see rota.cli.queue_controls."""

from rota.cli.queue_controls import register_resume as register

__all__ = ["register"]
