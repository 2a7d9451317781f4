-- Changes whenever another connection commits to the file (cheap: no table is read).
PRAGMA data_version
