-- Whether the ledger of applied migrations exists yet (a fresh database has none).
SELECT to_regclass(%(ledger)s) IS NOT NULL
