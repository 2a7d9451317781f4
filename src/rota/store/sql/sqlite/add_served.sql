-- Add a worker's newly served attempts to the minute's history bucket.
INSERT INTO rota_served (minute, grp, queue, outcome, count)
VALUES (:minute, :grp, :queue, :outcome, :count)
ON CONFLICT (minute, grp, queue, outcome) DO UPDATE SET count = count + excluded.count;
