"""`rota jobs`: list jobs, filtered by state and Queue."""

from rota.cli.inspect_store import register_jobs as register

__all__ = ["register"]
