-- The version of every group's stored policy row: what a worker polls to learn that a
-- policy changed, without reading the policies themselves.
SELECT name, version FROM rota_group_policies;
