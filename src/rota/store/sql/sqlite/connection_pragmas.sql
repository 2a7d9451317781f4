-- Run on every new connection, outside any transaction.
-- WAL: readers never block the writer and the writer never blocks readers; persistent.
PRAGMA journal_mode = WAL;
-- NORMAL under WAL: a commit survives an application crash; only an OS crash or power
-- loss can roll back the last transactions, never corrupt the file.
PRAGMA synchronous = NORMAL;
