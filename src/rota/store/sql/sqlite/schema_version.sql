PRAGMA user_version;
