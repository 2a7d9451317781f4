"""Worker Group options: a group's name, Dispatch Policy, pool size and timings.

Pure value. The policy's own values are validated when the group starts, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from rota.core.durations import Duration, to_timedelta
from rota.core.policy import DispatchPolicy
from rota.core.queues import validate_name
from rota.core.retry import RetryPolicy
from rota.core.settings_range import checked_setting

DEFAULT_POOL_SIZE = 20


def validate_group_name(name: object) -> str:
    """`name` if it is a valid Worker Group name: the rule of Queue names
    (rota.core.queues), in the same words.

    Raises:
        TypeError: if it is not a str.
        ValueError: if it is empty, longer than 200 characters, or holds whitespace or
            control characters.
    """
    return validate_name(name, "Worker Group")


@dataclass(frozen=True, kw_only=True, init=False)
class WorkerGroupOptions:
    """How one Worker Group runs.

    Args:
        name: the group's name, unique within an App.
        policy: its Dispatch Policy (required; there is no default policy).
        pool_size: Workers in the pool, a whole number from 1 to 2**31 - 1; default 20.
        max_claim_batch: cap on jobs claimed per pass below `pool_size` (1 to 2**31 - 1);
            None = no cap.
        poll_interval: how often an idle group looks for due work (default 1 s).
        lease_duration: how long a claim holds a job without a heartbeat (default 60 s).
        heartbeat_interval: how often running jobs' leases are renewed
            (default lease_duration / 3).
        retry: the group's RetryPolicy; a job's own `retry=` overrides it.
        grace_period: at shutdown, how long running jobs may finish (default 30 s).

    Durations take a `timedelta` or a number of seconds.

    Raises:
        TypeError: if `policy` is missing or not a DispatchPolicy.
        ValueError: if `pool_size` or `max_claim_batch` is outside 1 to 2**31 - 1, a
            duration is not positive, or the name is empty.
    """

    # The normalised values __init__ stores (its signature holds the defaults).
    name: str
    policy: DispatchPolicy
    pool_size: int
    max_claim_batch: int | None
    poll_interval: timedelta
    lease_duration: timedelta
    heartbeat_interval: timedelta
    retry: RetryPolicy
    grace_period: timedelta

    def __init__(
        self,
        *,
        name: str,
        policy: DispatchPolicy,
        pool_size: int = DEFAULT_POOL_SIZE,
        max_claim_batch: int | None = None,
        poll_interval: Duration = 1,
        lease_duration: Duration = 60,
        heartbeat_interval: Duration | None = None,
        retry: RetryPolicy | None = None,
        grace_period: Duration = 30,
    ) -> None:
        validate_group_name(name)
        if not isinstance(policy, DispatchPolicy):
            raise TypeError(
                "policy must be a DispatchPolicy (DispatchPolicy.Strict(...) or "
                f"DispatchPolicy.Weighted([...])); got {policy!r}"
            )
        checked_setting(pool_size, "pool_size", minimum=1)
        if max_claim_batch is not None:
            checked_setting(max_claim_batch, "max_claim_batch", minimum=1,
                            none="None for no cap")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a rota.RetryPolicy; got {retry!r}")
        lease = to_timedelta(lease_duration, "lease_duration")
        heartbeat = (
            lease / 3 if heartbeat_interval is None
            else to_timedelta(heartbeat_interval, "heartbeat_interval")
        )
        if heartbeat >= lease:
            raise ValueError(
                f"heartbeat_interval ({heartbeat.total_seconds()} s) must be shorter than "
                f"lease_duration ({lease.total_seconds()} s), or leases expire between beats"
            )
        values: dict[str, object] = {
            "name": name,
            "policy": policy,
            "pool_size": pool_size,
            "max_claim_batch": max_claim_batch,
            "poll_interval": to_timedelta(poll_interval, "poll_interval"),
            "lease_duration": lease,
            "heartbeat_interval": heartbeat,
            "retry": retry if retry is not None else RetryPolicy(),
            "grace_period": to_timedelta(grace_period, "grace_period", allow_zero=True),
        }
        for key, normalised in values.items():
            object.__setattr__(self, key, normalised)

    @property
    def claim_capacity(self) -> int:
        """The most jobs one pass may claim: pool_size, capped by max_claim_batch."""
        if self.max_claim_batch is None:
            return self.pool_size
        return min(self.pool_size, self.max_claim_batch)
