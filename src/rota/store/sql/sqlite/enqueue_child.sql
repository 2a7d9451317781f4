-- A job with parents, in the state rota.core.workflows.at_enqueue gave it: waiting (for
-- :waiting_for parents), scheduled, or cancelled (with :finished_at and :last_error).
INSERT INTO rota_jobs (name, queue, state, due_at, args, kwargs, created_at, trace_context,
                       parents, after_outcome, waiting_for, finished_at, last_error, meta,
                       expires_at)
VALUES (:name, :queue, :state, :due_at, :args, :kwargs, :created_at, :trace_context,
        :parents, :after_outcome, :waiting_for, :finished_at, :last_error, :meta,
        :expires_at)
RETURNING id;
