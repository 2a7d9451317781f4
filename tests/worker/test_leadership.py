"""The election's pieces alone (rota.worker.leadership): the lease's name per App
configuration, and cadences that never outlast the job leases they protect."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rota.core.clock import VirtualClock
from rota.core.retention import Retention
from rota.core.schedules import Schedule
from rota.store.memory import MemoryStore
from rota.worker import leadership
from rota.worker.leadership import Election, maintenance_lease_name


def election(**kwargs: float | None) -> Election:
    return Election(MemoryStore(), VirtualClock(), "maintenance", "w1", **kwargs)


def test_default_cadences() -> None:
    chosen = election()
    assert (chosen.ttl_s, chosen.renew_s, chosen.follow_s) == (
        leadership.LEADER_TTL_S, leadership.RENEW_S, leadership.FOLLOW_S)


def test_short_job_leases_shrink_the_leader_lease_in_proportion() -> None:
    # Given groups whose job leases are 3 s, shorter than the leader's 10 s
    chosen = election(job_lease_s=3.0)
    # Then a dead leader is replaced no later than its jobs' leases expire
    scale = 3.0 / leadership.LEADER_TTL_S
    assert chosen.ttl_s == pytest.approx(3.0)
    assert chosen.renew_s == pytest.approx(leadership.RENEW_S * scale)
    assert chosen.follow_s == pytest.approx(leadership.FOLLOW_S * scale)
    # And longer job leases change nothing
    assert election(job_lease_s=60.0).ttl_s == leadership.LEADER_TTL_S


def test_a_renewal_cadence_not_shorter_than_the_lease_is_refused() -> None:
    with pytest.raises(ValueError, match="renew_s < ttl_s"):
        election(ttl_s=3.0, renew_s=3.0)


def schedules_of(app_rules: dict[str, str]) -> list[Schedule]:
    import rota

    app = rota.App("memory://")
    app.job("report")(lambda: None)
    return [app.schedule(name, "report", cron=rule) for name, rule in app_rules.items()]


def test_the_lease_name_is_per_app_configuration() -> None:
    # Given the same configuration twice, and configurations differing in one thing each
    same = maintenance_lease_name(Retention(), schedules_of({"nightly": "0 3 * * *"}))
    again = maintenance_lease_name(Retention(), schedules_of({"nightly": "0 3 * * *"}))
    other_rule = maintenance_lease_name(Retention(), schedules_of({"nightly": "0 4 * * *"}))
    other_retention = maintenance_lease_name(Retention(succeeded=timedelta(hours=1)),
                                             schedules_of({"nightly": "0 3 * * *"}))
    # Then workers of one App share one lease, and any difference makes another
    assert same == again and same.startswith("maintenance:")
    assert len({same, other_rule, other_retention}) == 3
    # And an App that keeps everything names it the same with or without a Retention
    assert maintenance_lease_name(None, []) == maintenance_lease_name(
        Retention(succeeded=None, failed=None), [])
