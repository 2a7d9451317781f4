"""`rota queues`: every Queue with its settings and job counts (rota.cli.queue_controls)."""

from rota.cli.queue_controls import register_queues as register

__all__ = ["register"]
