"""`rota queues`: counts of jobs per Queue and state."""

from rota.cli.inspect_store import register_queues as register

__all__ = ["register"]
