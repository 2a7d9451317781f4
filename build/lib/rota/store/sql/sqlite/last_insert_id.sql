SELECT last_insert_rowid();
