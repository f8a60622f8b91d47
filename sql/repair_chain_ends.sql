-- Repair chains that have ended: a repair candidate with a real verdict and no repair of
-- its own, which passed or has used up the rounds. The repair stage turns each into a
-- trajectory (sql/repair_chains.sql gives the turns).
-- Parameters: $domain, $task_ids, $max_attempt.
SELECT c.candidate_id, c.task_id, v.status
FROM candidates AS c
JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
WHERE c.domain = $domain
  AND list_contains($task_ids, c.task_id)
  AND c.origin = 'repair'
  AND v.status <> 'infra_error'
  AND (v.status = 'pass' OR c.attempt >= $max_attempt)
  AND NOT EXISTS (SELECT 1 FROM candidates AS k WHERE k.parent_id = c.candidate_id)
ORDER BY c.task_id, c.candidate_id;
