-- Why a fire did not happen: the definition the store holds (no row: never registered).
SELECT definition FROM rota_schedules WHERE name = :name;
