"""The runtime: Worker Groups claiming, dispatching and recording outcomes.

Holds no dispatch logic of its own: it asks `rota.core.dispatch` what to claim and tells it
what was served.
"""
