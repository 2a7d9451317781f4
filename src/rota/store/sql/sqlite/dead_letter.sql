-- Returns the id of a job with children that it ended (NULL otherwise): the store
-- wakes the Queues of the children that the settle trigger released.
UPDATE rota_jobs
SET state = 'dead_lettered', last_error = :error, last_traceback = :traceback,
    finished_at = :now,
    -- the failed attempt appended to the last 20 (rota.core.progress.MAX_KEPT_ERRORS)
    errors = json_insert(CASE WHEN json_array_length(coalesce(errors, '[]')) >= 20
                          THEN json_remove(errors, '$[0]') ELSE coalesce(errors, '[]') END,
                     '$[#]', json(:attempt_error)),
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt
RETURNING CASE WHEN has_children THEN id END;
