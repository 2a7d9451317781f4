-- Give a leader lease up (a stopping leader): only the owner's, so that the next try of
-- any other worker takes it at once.
DELETE FROM rota_leaders WHERE name = :name AND owner = :owner;
