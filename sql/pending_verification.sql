-- Candidates of the given tasks that still need a verdict from the current verifier
-- version: none yet, or only infra_error ones (the infrastructure's failure is retried).
-- Parameters: $domain, $verifier, $verifier_version, $task_ids (list of task ids).
SELECT c.*
FROM candidates AS c
WHERE c.domain = $domain
  AND list_contains($task_ids, c.task_id)
  AND NOT EXISTS (
      SELECT 1
      FROM verdicts AS v
      WHERE v.candidate_id = c.candidate_id
        AND v.verifier = $verifier
        AND v.verifier_version = $verifier_version
        AND v.status <> 'infra_error'
  )
ORDER BY c.task_id, c.candidate_id;
