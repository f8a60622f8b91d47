-- The artifacts of one candidate's latest verdict (`crucible show`): its picture, STEP,
-- STL, logs. Parameter: $prefix (a candidate_id or a prefix of one, at least 6 chars).
WITH cand AS (
    SELECT candidate_id, task_id
    FROM candidates
    WHERE starts_with(candidate_id, $prefix)
),
latest AS (
    SELECT v.*
    FROM latest_verdicts v
    JOIN cand USING (candidate_id)
)
SELECT
    c.candidate_id,
    t.name AS task,
    t.domain,
    l.status,
    l.code,
    l.verdict_id,
    a.kind,
    a.name,
    a.size,
    a.sha256
FROM cand c
JOIN tasks t USING (task_id)
LEFT JOIN latest l USING (candidate_id)
LEFT JOIN artifacts a ON a.verdict_id = l.verdict_id
ORDER BY c.candidate_id, a.kind, a.name;
