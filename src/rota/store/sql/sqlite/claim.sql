-- The SQLite claim: one template and its parts (`-- @part`, rota/store/sql_template.py),
-- composed when a statement loads (rota/store/sqlite/schema.py, CLAIMS) into:
--   claim           up to :limit due jobs of one Queue (the part one_queue);
--   claim_many      a batched claim with per-Queue limits (a round of the Weighted
--                   planner): one arm per Queue, joined by UNION ALL;
--   claim_ones      a batched claim whose per-Queue limits are all 1 (the part firsts).
-- Each takes a Queue's room from the part room, the one copy of that rule on SQLite. A
-- placeholder with no value, or a value no placeholder takes, raises as it loads.
--
-- The literal state = 'scheduled' lets the planner use the partial index. The caller
-- holds the write lock (BEGIN IMMEDIATE), so no other claimer can lease between a Queue's
-- count of leased jobs and this UPDATE. RETURNING rows come back in no guaranteed order:
-- the caller groups and sorts them.
--
-- Expiry: a due job past its expires_at (before :now) is ended cancelled instead of leased
-- (docs/decisions/0071), by the same UPDATE: the caller tells it by its expires_at (before
-- :now: never so for a leased row) and reports it. For a job without one (NULL) each test
-- is NULL, so the ELSE applies. The trigger of migration 14 counts it and settles its
-- children; the caller counts only the leased rows.
UPDATE rota_jobs
SET state = CASE WHEN expires_at < :now THEN 'cancelled' ELSE 'leased' END,
    attempt = CASE WHEN expires_at < :now THEN attempt ELSE attempt + 1 END,
    lease_owner = CASE WHEN expires_at < :now THEN NULL ELSE :owner END,
    lease_expires_at = CASE WHEN expires_at < :now THEN NULL ELSE :lease_expires_at END,
    started_at = CASE WHEN expires_at < :now THEN started_at ELSE :now END,
    finished_at = CASE WHEN expires_at < :now THEN :now ELSE finished_at END,
    last_error = CASE WHEN expires_at < :now
        THEN 'Expired: not started by '
             || strftime('%Y-%m-%d %H:%M:%S', expires_at / 1000000, 'unixepoch') || ' UTC'
        ELSE last_error END,
    last_traceback = CASE WHEN expires_at < :now THEN NULL ELSE last_traceback END,
    worker = CASE WHEN expires_at < :now THEN worker ELSE :worker END,
    progress = NULL
WHERE id IN (
{picked}
)
-- The columns the claim just set (state, lease_owner, lease_expires_at, started_at) are the
-- caller's own parameters: it does not read them back.
RETURNING id, name, queue, attempt, due_at, args, kwargs, last_error, created_at, result,
          cancel_requested, finished_at, trace_context, parents, meta, expires_at;

-- @part due
-- The first {take} due jobs of Queue {queue}: an index range scan of rota_jobs_claimable,
-- due-time order, ties by id (enqueue order).
SELECT id FROM rota_jobs
WHERE state = 'scheduled' AND queue = {queue} AND due_at <= :now
ORDER BY due_at, id
LIMIT {take}

-- @part arm
-- claim_many: one arm per Queue (its parameters :queue_N and :limit_N, N numbered when the
-- count of Queues is known: claims.py `claim_many_sql`), each an index range scan of its
-- own Queue with its own LIMIT (that Queue's room). Used only when the per-Queue limits
-- together fit in the claim's total (then the arms are independent); otherwise the store
-- runs claim Queue after Queue. One statement instead of one per Queue: a pass over 20
-- tenants cost 20.
SELECT id FROM (
{due}
)

-- @part firsts
-- claim_ones: :queues is a JSON array of the names. Each Queue's job is one index seek on
-- rota_jobs_claimable (a scalar subquery per name) if its room for one job is not 0, and
-- the statement is the same text for any number of Queues, where claim_many compiles one
-- arm per Queue (measured over 20 tenants: ~16 % less time than claim_many's 20 arms).
SELECT (
{due}
)
FROM json_each(:queues) AS asked
WHERE {room} > 0

-- @part room
-- The room rule: how many jobs a claim may lease from Queue {queue} now when it asks for
-- {wanted}, rota.core.queue_controls.room(settings, leased, wanted) (tests/store/
-- test_contract_room.py checks they agree): none while the Queue is paused; with a
-- concurrency limit, that limit less its jobs leased now (counted on the partial index
-- rota_jobs_leased); never below 0. No settings row: what it asks for.
(SELECT max(0, CASE
     WHEN settings.paused THEN 0
     WHEN settings.concurrency_limit IS NULL THEN {wanted}
     ELSE min({wanted}, settings.concurrency_limit - (
         SELECT count(*) FROM rota_jobs AS leased
         WHERE leased.state = 'leased' AND leased.queue = {queue}
     ))
 END)
 FROM (SELECT 1) LEFT JOIN rota_queue_settings AS settings ON settings.queue = {queue})
