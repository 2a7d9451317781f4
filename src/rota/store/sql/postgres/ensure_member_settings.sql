-- In a limited claim, before lock_queue_limits.sql: a row for each Queue asked whose limit
-- or rate is a family's, so that claimers of that Queue lock its row (a family's limit
-- binds each member on its own) and its bucket has a place. Rows that exist stay as
-- they are.
INSERT INTO {schema}.queue_settings (queue)
SELECT unnest(%(members)s::text[])
ON CONFLICT (queue) DO NOTHING
