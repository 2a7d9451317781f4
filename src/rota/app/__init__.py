"""The App: the facade a user holds (rota.app.app), over one module per concern.

`definition` (job definitions), `jobs` (the job registry and enqueue options),
`settings` (where the store lives, how it opens), `groups` (Worker Groups and their
policies), `schedules` (defining, checking and firing schedules), `status` (health, served
counts, fairness), `waiting` (waits for jobs to finish), and the two drives: `inline`
(`run_until_idle`) and `realtime` (`serve`, `run`, over rota.worker.runtime). These
modules are internal; the public names are rota's `__all__`.
"""

from rota.app.app import App, store_location

__all__ = ["App", "store_location"]
