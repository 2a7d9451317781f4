-- History buckets older than the retention of the served history.
DELETE FROM rota_served WHERE minute < :before;
