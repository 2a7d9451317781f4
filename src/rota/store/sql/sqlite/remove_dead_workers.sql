-- Rows of workers dead for long (not refreshed since long before their dead_at).
DELETE FROM rota_workers WHERE dead_at < :dead_before;
