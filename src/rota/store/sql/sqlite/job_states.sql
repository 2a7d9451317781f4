-- The states of the jobs a waiter waits for (`App.wait`), in one read by primary key;
-- :ids is a JSON array. A job that does not exist (purged) is left out.
SELECT id, state
FROM rota_jobs
WHERE id IN (SELECT value FROM json_each(:ids));
