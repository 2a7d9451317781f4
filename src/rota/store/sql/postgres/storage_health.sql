-- What holds back vacuum of rota's tables, and their dead rows (rota.core.storage_health):
-- read by `rota health`, /healthz, the dashboard and its /metrics at every call, so it
-- reads only the statistics views (no table of rota's, no lock, no superuser needed).
-- One row per holder of the xmin horizon, then one per table of the schema:
-- (kind, name, age_s, age_xids, application, state, started_at, query, database, live, dead).
-- Ages are taken on the server's clock against the server's own timestamps.
--
-- Backends: any with a snapshot (backend_xmin) or an xid (backend_xid) in this database
-- (since PostgreSQL 14, other databases' snapshots do not hold back this one's tables), or
-- in none (a walsender with hot_standby_feedback), except this very connection. Every role
-- sees backend_xmin and backend_xid; another role's xact_start, state and query are hidden unless
-- it has pg_read_all_stats, so the age in transactions stands in for the age in seconds.
SELECT 'backend', a.pid::text,
       extract(epoch FROM clock_timestamp() - a.xact_start)::float8,
       greatest(age(a.backend_xmin), age(a.backend_xid))::bigint,
       coalesce(a.application_name, ''), coalesce(a.state, ''), a.xact_start,
       -- A hidden backend's state is NULL, its query '<insufficient privilege>'.
       CASE WHEN a.state IS NULL THEN '' ELSE left(coalesce(a.query, ''), 100) END,
       a.datname, NULL::bigint, NULL::bigint
FROM pg_stat_activity AS a
WHERE (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
  AND (a.datname = current_database() OR a.datname IS NULL)
  AND a.pid <> pg_backend_pid()
UNION ALL
-- Replication slots (cluster-wide): xmin holds back every table, catalog_xmin the
-- catalogs. No time is kept before PostgreSQL 17's inactive_since (read through jsonb so
-- that older servers answer NULL).
SELECT 'replication slot', s.slot_name::text,
       extract(epoch FROM clock_timestamp()
               - (to_jsonb(s) ->> 'inactive_since')::timestamptz)::float8,
       greatest(age(s.xmin), age(s.catalog_xmin))::bigint,
       s.slot_type || coalesce(' ' || s.plugin, ''),
       CASE WHEN s.active THEN 'active' ELSE 'inactive' END,
       NULL::timestamptz, '', s.database::text, NULL, NULL
FROM pg_replication_slots AS s
WHERE s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL
UNION ALL
-- Prepared transactions (two-phase commit), cluster-wide, until committed or rolled back.
SELECT 'prepared transaction', p.gid,
       extract(epoch FROM clock_timestamp() - p.prepared)::float8,
       age(p.transaction)::bigint, p.owner::text, '', p.prepared, '', p.database::text,
       NULL, NULL
FROM pg_prepared_xacts AS p
UNION ALL
-- rota's tables, with the statistics' live and dead row estimates.
SELECT 'table', t.relname::text, NULL, NULL, '', '', NULL, '', NULL, t.n_live_tup,
       t.n_dead_tup
FROM pg_stat_user_tables AS t
WHERE t.schemaname = %(schema)s
