-- find_jobs (ascending ids, past the id `beyond`) and find_jobs_newest (descending,
-- before it), composed by sql_base.by_id_both_ways: keyset paging (the bulk actions walk
-- their jobs with find_jobs), filtered by Queue, state, job name and meta (NULL: any).
-- meta: rota_meta_matches, the rule of rota.core.meta run in the store's process (a
-- function the connection registers), over the rows the other filters leave: no index.
-- instr(meta, :needle) first, in C: the text every matching meta holds (meta_needle:
-- stored meta is always encode_meta's compact text), so most rows never reach Python.
SELECT id, name, queue, state, attempt, due_at, args, kwargs, last_error, created_at,
       lease_owner, lease_expires_at, started_at, result,
       cancel_requested, finished_at, key, last_traceback, parents, meta,
       snoozes, expires_at,
       progress, errors, worker, after_outcome
FROM rota_jobs
WHERE (:beyond IS NULL OR id {beyond} :beyond)
  AND (:queue IS NULL OR queue = :queue) AND (:state IS NULL OR state = :state)
  AND (:name IS NULL OR name = :name)
  AND (:meta IS NULL OR (instr(meta, :needle) > 0 AND rota_meta_matches(meta, :meta)))
ORDER BY id {order}
LIMIT :limit;
