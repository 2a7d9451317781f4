-- The highest job id so far (0 for an empty store): where the enqueue watcher starts.
SELECT coalesce(max(id), 0) FROM rota_jobs
