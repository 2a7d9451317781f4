-- Migration 9: each worker's clock offset to the store's clock (seconds; positive: the
-- worker's machine runs ahead), refreshed with its heartbeats, shown by `rota workers`.
-- {schema} is replaced by the store's schema, quoted as an identifier.
ALTER TABLE {schema}.workers ADD COLUMN clock_offset double precision NOT NULL DEFAULT 0;
