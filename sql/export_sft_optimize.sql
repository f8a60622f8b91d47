-- SFT optimize: the pool of passing dedup keepers of train tasks with their perf metrics,
-- only tasks with at least two of them. Pairing (slower -> better by a margin on the
-- domain's metric) happens in lake/export.py, where PERF_METRICS names the metric.
WITH keepers AS (
    SELECT
        c.candidate_id,
        c.task_id,
        c.domain,
        c.origin,
        c.code,
        t.name AS task_name,
        t.level,
        v.verdict_id,
        v.verifier,
        v.verifier_version,
        v.toolchain,
        v.metrics
    FROM candidates AS c
    JOIN tasks AS t ON t.task_id = c.task_id
    JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
    JOIN latest_dedup AS d ON d.candidate_id = c.candidate_id
    WHERE t.split = 'train'
        AND v.status = 'pass'
        AND d.keeper
        AND NOT d.contaminated
)
SELECT *
FROM keepers
QUALIFY count(*) OVER (PARTITION BY task_id) >= 2
ORDER BY domain, task_name, candidate_id;
