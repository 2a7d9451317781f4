-- Jobs per (Queue, state), as kept by migration 8; pairs with none are left out.
SELECT queue, state, jobs FROM {schema}.job_counts_now
