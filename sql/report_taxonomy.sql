-- The failures among the verdicts one run wrote ($run_id), by status, category and
-- taxonomy code: what that run found (`error_taxonomy` is the lake-wide view, over the
-- latest verdict of every candidate). share is of this run's failing verdicts,
-- infra_error included.
SELECT
    status,
    category,
    code,
    count(*) AS count,
    count(*) / sum(count(*)) OVER () AS share,
    min(candidate_id) AS example_candidate_id
FROM verdicts
WHERE run_id = $run_id AND status <> 'pass'
GROUP BY status, category, code
ORDER BY count DESC, status, category, code;
