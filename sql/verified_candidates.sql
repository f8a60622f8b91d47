-- Candidates whose latest verdict passed: what the offline repair rebuilds from.
-- Parameters: $domain, $task_ids.
SELECT c.*
FROM candidates AS c
JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
WHERE c.domain = $domain
  AND list_contains($task_ids, c.task_id)
  AND v.status = 'pass'
ORDER BY c.task_id, c.candidate_id;
