-- Pass rate per domain and task level, one outcome per candidate (its latest verdict;
-- infra_error left out of the denominator): what the Prefect UI shows for each run.
SELECT
    v.domain,
    t.level,
    count(*) FILTER (WHERE v.status <> 'infra_error') AS judged,
    count(*) FILTER (WHERE v.status = 'pass') AS passed,
    count(*) FILTER (WHERE v.status = 'pass')
        / nullif(count(*) FILTER (WHERE v.status <> 'infra_error'), 0) AS pass_rate,
    count(*) FILTER (WHERE v.status = 'infra_error') AS infra_errors
FROM latest_verdicts AS v
LEFT JOIN tasks AS t ON t.task_id = v.task_id
GROUP BY v.domain, t.level
ORDER BY v.domain, t.level NULLS LAST;
