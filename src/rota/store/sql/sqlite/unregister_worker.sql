-- A worker's graceful stop removes its row.
DELETE FROM rota_workers WHERE id = :id;
