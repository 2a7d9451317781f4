-- The live (scheduled or leased) jobs holding the given (name, key) pairs, through the
-- partial unique index jobs_live_key: (name, key, id) rows.
SELECT j.name, j.key, j.id
FROM unnest(%(names)s::text[], %(keys)s::text[]) AS k(name, key)
JOIN {schema}.jobs AS j
  ON j.name = k.name AND j.key = k.key
 AND j.key IS NOT NULL AND j.state IN ('scheduled', 'leased')
