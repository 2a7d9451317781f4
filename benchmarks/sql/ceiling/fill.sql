-- %(count)s noop jobs on Queue 'bench', all due now.
INSERT INTO jobs (name, queue, due_at, args)
SELECT 'noop', 'bench', %(now)s, '[]'::json
FROM generate_series(1, %(count)s);
