-- Run on every new connection, outside any transaction.
-- WAL: readers never block the writer and the writer never blocks readers; persistent.
PRAGMA journal_mode = WAL;
-- NORMAL under WAL: a commit survives an application crash; only an OS crash or power
-- loss can roll back the last transactions, never corrupt the file.
PRAGMA synchronous = NORMAL;
-- Keep the -wal file small (docs/stores.md, "Disk space"). A commit that leaves more than
-- this many pages (4 KiB each: 4 MiB) in the WAL folds them back into the database (a
-- PASSIVE checkpoint: it never waits). SQLite's default, set here so it is stated.
PRAGMA wal_autocheckpoint = 1000;
-- After a checkpoint has folded back the whole WAL, the next writer starts it over and
-- truncates the file to at most this many bytes; without it the file keeps its largest
-- size forever (measured: 14.7 MiB after a busy drain, for good).
PRAGMA journal_size_limit = 4194304;
