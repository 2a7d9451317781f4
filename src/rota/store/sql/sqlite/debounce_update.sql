-- A debounced enqueue that found its key's collecting job (debounce_holder.sql): that job
-- takes the new arguments and due time, capped at its first enqueue (created_at) +
-- max_wait (microseconds; NULL: no cap).
UPDATE rota_jobs
SET args = :args, kwargs = :kwargs,
    due_at = CASE WHEN :max_wait IS NULL THEN :due_at
                  ELSE min(:due_at, created_at + :max_wait) END
WHERE id = :id;
