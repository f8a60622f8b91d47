-- Passing verdicts whose formal check against the reference ended undecided within its
-- limit (metrics.equivalence = 'unknown'): the design passed the testbench, but nothing
-- proved it equals the reference (a trojan that fires after 2^32 cycles looks like this).
-- Exports leave out rows that teach such a pass unless asked not to (`require_proven`).
-- A verdict without the metric had no formal check to be undecided (another domain, or
-- a task without a reference): it is not listed.
SELECT verdict_id
FROM raw_verdicts
WHERE status = 'pass'
    AND json_extract_string(metrics, '$.equivalence') = 'unknown';
