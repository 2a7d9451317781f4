-- The database server's clock at this moment (not the transaction's start, as now() is).
SELECT clock_timestamp()
