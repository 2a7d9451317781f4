SELECT id FROM (
    SELECT id FROM rota_jobs
    WHERE state = 'scheduled' AND queue = :queue_N AND due_at <= :now
    ORDER BY due_at, id
    LIMIT (
        SELECT CASE
            WHEN settings.paused THEN 0
            WHEN settings.concurrency_limit IS NULL THEN :limit_N
            ELSE max(0, min(:limit_N, settings.concurrency_limit - (
                SELECT count(*) FROM rota_jobs AS leased
                WHERE leased.state = 'leased' AND leased.queue = :queue_N
            )))
        END
        FROM (SELECT 1) LEFT JOIN rota_queue_settings AS settings ON settings.queue = :queue_N
    )
)
