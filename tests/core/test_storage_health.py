"""The warnings of a store's storage (rota.core.storage_health): a held xmin horizon named
by its holder, dead rows over live ones past a floor, a WAL past its limit."""

from __future__ import annotations

from datetime import UTC, datetime

from rota.core.storage_health import (
    HorizonHolder,
    StorageHealth,
    StorageLimits,
    TableRows,
    storage_warnings,
)

STARTED = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def backend(age_s: float | None, query: str = "SELECT * FROM report") -> HorizonHolder:
    return HorizonHolder("backend", "4242", age_s, 1500, "psql", "idle in transaction",
                         STARTED if age_s is not None else None, query, "jobs")


def test_nothing_to_say_about_a_clean_store() -> None:
    assert storage_warnings(StorageHealth(has_horizon=True)) == ()
    assert storage_warnings(StorageHealth(wal_file="x.db-wal", wal_bytes=4 * 2**20)) == ()


def test_a_horizon_held_past_the_limit_names_the_backend_and_how_to_end_it() -> None:
    health = StorageHealth((backend(301.0), backend(2.0)), has_horizon=True)
    [warning] = storage_warnings(health)
    assert "xmin horizon is held back (5 min and 1,500 transactions old)" in warning
    assert "backend pid 4242, application 'psql', state 'idle in transaction'" in warning
    assert "transaction started 2026-01-01T12:00:00+00:00" in warning
    assert "query 'SELECT * FROM report'" in warning
    assert "pg_terminate_backend(4242)" in warning
    assert warning.count("backend pid") == 1  # the young one is not named
    assert storage_warnings(StorageHealth((backend(299.0),), has_horizon=True)) == ()


def test_the_limit_is_a_parameter_and_a_long_query_is_cut() -> None:
    health = StorageHealth((backend(0.5, "SELECT " + "x, " * 100),), has_horizon=True)
    [warning] = storage_warnings(health, StorageLimits(horizon_age_s=0.1))
    query = warning.split("query '")[1].split("'")[0]
    assert len(query) == 100


def test_a_hidden_query_or_age_is_said_so_and_judged_by_transactions() -> None:
    hidden = HorizonHolder("backend", "7", None, 400_000, "", "", None, "", "jobs")
    [warning] = storage_warnings(StorageHealth((hidden,), has_horizon=True))
    assert "query hidden" in warning and "400,000 transactions old" in warning
    assert "held back (400,000 transactions old)" in warning  # no age in seconds claimed
    young = HorizonHolder("backend", "7", None, 10, "", "", None, "", "jobs")
    assert storage_warnings(StorageHealth((young,), has_horizon=True)) == ()


def test_slots_and_prepared_transactions_are_named_with_their_remedy() -> None:
    slot = HorizonHolder("replication slot", "standby_1", None, 900_000, "physical",
                         "inactive")
    prepared = HorizonHolder("prepared transaction", "tx-9", 600.0, 50, "app", "",
                             STARTED, "", "jobs")
    [warning] = storage_warnings(StorageHealth((prepared, slot), has_horizon=True))
    assert "replication slot 'standby_1', physical, inactive" in warning
    assert "pg_drop_replication_slot('standby_1')" in warning
    assert "prepared transaction 'tx-9'" in warning and "ROLLBACK PREPARED 'tx-9'" in warning


def test_more_dead_rows_than_live_ones_past_the_floor_warn_per_table() -> None:
    tables = (TableRows("jobs", 100, 20_000), TableRows("workers", 3, 9_000),
              TableRows("served", 50_000, 40_000))
    [warning] = storage_warnings(StorageHealth(tables=tables, has_horizon=True))
    assert warning.startswith("table jobs carries more dead rows than live ones "
                              "(20,000 dead, 100 live)")
    assert len(storage_warnings(StorageHealth(tables=tables),
                                StorageLimits(dead_rows_floor=1000))) == 2


def test_a_wal_past_its_limit_names_the_file_its_size_and_the_remedy() -> None:
    health = StorageHealth(wal_file="/var/lib/app/rota.db-wal", wal_bytes=100 * 2**20)
    [warning] = storage_warnings(health)
    assert "/var/lib/app/rota.db-wal is 100 MiB (over 64 MiB)" in warning
    assert "end that reader" in warning
    assert storage_warnings(health, StorageLimits(wal_bytes=200 * 2**20)) == ()


def test_the_horizon_age_is_the_oldest_known() -> None:
    health = StorageHealth((backend(None), backend(12.5), backend(3.0)), has_horizon=True)
    assert health.horizon_age_s == 12.5 and health.horizon_age_xids == 1500
    assert StorageHealth().horizon_age_s == 0.0 and StorageHealth().horizon_age_xids == 0
