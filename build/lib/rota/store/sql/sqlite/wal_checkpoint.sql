-- Fold the WAL back into the database as far as readers allow, without waiting for
-- anyone: the worker's periodic duty (rota/worker/checkpoint.py). Returns (busy, frames in
-- the WAL, frames folded back).
PRAGMA wal_checkpoint(PASSIVE);
