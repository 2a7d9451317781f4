"""An App for `rota worker` refusals: a memory:// store (nothing to close) and one group.

`rota worker tests.chaos.hostile_app:app --group NAME` with a hostile NAME must refuse
cleanly; nothing here ever runs a job."""

from __future__ import annotations

import rota

app = rota.App("memory://")
app.add_worker_group(rota.WorkerGroupOptions(name="main", policy=rota.Strict("default")))
