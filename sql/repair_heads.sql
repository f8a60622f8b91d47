-- Failed candidates to repair next: the latest verdict from the current verifier version
-- is a candidate failure (never infra_error: that is retried by verify, not repaired), the
-- task is a training task, the candidate has rounds left, no repair of it exists yet, and
-- it is not already part of a closed repair chain (a trajectory).
-- Parameters: $domain, $task_ids, $verifier, $verifier_version, $max_attempt.
SELECT c.task_id, c AS candidate, v AS verdict
FROM candidates AS c
JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
JOIN tasks AS t ON t.task_id = c.task_id
WHERE c.domain = $domain
  AND list_contains($task_ids, c.task_id)
  AND v.verifier = $verifier
  AND v.verifier_version = $verifier_version
  AND v.status NOT IN ('pass', 'infra_error')
  AND t.split = 'train'
  AND c.attempt < $max_attempt
  AND NOT EXISTS (SELECT 1 FROM candidates AS k WHERE k.parent_id = c.candidate_id)
  AND NOT EXISTS (
      SELECT 1
      FROM trajectories AS tr
      WHERE list_contains(list_transform(tr.turns, lambda u: u.candidate_id), c.candidate_id)
  )
ORDER BY c.task_id, c.candidate_id;
