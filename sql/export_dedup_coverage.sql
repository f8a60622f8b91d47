-- Per domain: passing candidates of train tasks, and how many of them dedup has judged.
-- An export takes only judged keepers, so a domain with passing candidates and no dedup
-- row at all means dedup never ran there.
SELECT
    c.domain,
    count(*) AS passing,
    count(d.candidate_id) AS judged
FROM candidates AS c
JOIN tasks AS t ON t.task_id = c.task_id
JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
LEFT JOIN latest_dedup AS d ON d.candidate_id = c.candidate_id
WHERE t.split = 'train' AND v.status = 'pass'
GROUP BY c.domain
ORDER BY c.domain;
