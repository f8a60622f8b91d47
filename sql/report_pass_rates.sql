-- Pass rate per domain, task level and candidate origin of the verdicts one run wrote
-- ($run_id): what that run found, not where the lake stands (`pass_rates_by_level` is
-- the lake-wide view). infra_error is counted on its own and left out of the denominator;
-- a reference's check at ingest has no candidate row when the run's channel makes no
-- reference candidates, and counts as origin 'reference'.
SELECT
    v.domain,
    t.level,
    coalesce(c.origin, CASE WHEN v.candidate_id = r.reference_id THEN 'reference' END)
        AS origin,
    count(*) FILTER (WHERE v.status <> 'infra_error') AS judged,
    count(*) FILTER (WHERE v.status = 'pass') AS passed,
    count(*) FILTER (WHERE v.status = 'pass')
        / nullif(count(*) FILTER (WHERE v.status <> 'infra_error'), 0) AS pass_rate,
    count(*) FILTER (WHERE v.status = 'infra_error') AS infra_errors
FROM verdicts AS v
LEFT JOIN tasks AS t ON t.task_id = v.task_id
LEFT JOIN candidates AS c ON c.candidate_id = v.candidate_id
LEFT JOIN task_references AS r ON r.task_id = v.task_id
WHERE v.run_id = $run_id
GROUP BY ALL
ORDER BY v.domain, t.level NULLS LAST, origin NULLS LAST;
