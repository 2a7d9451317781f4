"""The dashboard's view of the store's storage (rota.core.storage_health): the gauges of
/metrics per store, the warnings in /healthz and on the Queues page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rota.dashboard.server import Source
from tests.dashboard.conftest import Seeded, ServedDashboard

Serve = Callable[..., ServedDashboard]
HTML = {"Accept": "text/html"}


def test_metrics_carry_the_storage_gauges_of_the_store(seeded: Seeded, serve: Serve) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(dashboard.get("/metrics").text)
               for s in family.samples}
    names = {name for name, _ in samples}
    url = seeded.source if isinstance(seeded.source, str) else "memory://"
    if url.startswith("postgresql"):
        # Nothing holds the fresh database's horizon but the seeding's own short reads.
        assert samples[("rota_postgres_xmin_horizon_age_seconds", ())] < 60
        assert ("rota_postgres_xmin_horizon_age_transactions", ()) in samples
        assert samples[("rota_postgres_table_live_rows", (("table", "jobs"),))] >= 0
        assert ("rota_postgres_table_dead_rows", (("table", "jobs"),)) in samples
        assert "rota_sqlite_wal_bytes" not in names
    elif url.startswith("sqlite"):
        assert samples[("rota_sqlite_wal_bytes", ())] > 0
        assert not any(name.startswith("rota_postgres_") for name in names)
    else:
        assert not any(name.startswith(("rota_postgres_", "rota_sqlite_")) for name in names)


def test_healthz_and_the_queues_page_show_the_warnings(
    seeded: Seeded, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    dashboard = serve(seeded.source, clock=seeded.clock)
    assert dashboard.get("/healthz").json()["warnings"] == []
    assert 'class="warnings"' not in dashboard.get("/queues", headers=HTML).text
    said = ("the xmin horizon is held back <by pid 7>",)
    monkeypatch.setattr(Source, "storage_warnings", lambda self: said)
    monkeypatch.setattr("rota.app.status.store_warnings", lambda store, limits=None: said)
    page = dashboard.get("/queues", headers=HTML).text
    assert 'class="warnings" role="alert"' in page
    assert "the xmin horizon is held back &lt;by pid 7&gt;" in page
    reply = dashboard.get("/healthz")
    assert reply.status == 200 and reply.json()["warnings"] == list(said)
