"""`rota pause`: see rota.cli.queue_controls."""

from rota.cli.queue_controls import register_pause as register

__all__ = ["register"]
