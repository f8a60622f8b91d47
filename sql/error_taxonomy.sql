-- What went wrong, by taxonomy code, over the latest verdict of every candidate.
-- Passes are left out; share is of all failing candidates, infra_error included (it shows
-- how much of the failure budget the infrastructure spends). The example is the smallest
-- candidate_id of the group: arbitrary, but the same on every run.
WITH failed AS (
    SELECT status, category, code, candidate_id
    FROM latest_verdicts
    WHERE status <> 'pass'
)
SELECT
    status,
    category,
    code,
    count(*) AS count,
    count(*) / sum(count(*)) OVER () AS share,
    min(candidate_id) AS example_candidate_id
FROM failed
GROUP BY status, category, code
ORDER BY count DESC, status, category, code;
