-- The reference checks still to do (sql/views/15_reference_checks.sql): tasks among these
-- whose reference has no verdict from the domain's current verifier version (an
-- infra_error one is retried), as sql/pending_verification.sql selects candidates.
-- Parameters: $domain, $verifier, $verifier_version, $task_ids.
SELECT r.task_id
FROM task_references AS r
WHERE r.domain = $domain
  AND list_contains($task_ids, r.task_id)
  AND NOT EXISTS (
      SELECT 1
      FROM verdicts AS v
      WHERE v.candidate_id = r.reference_id
        AND v.verifier = $verifier
        AND v.verifier_version = $verifier_version
        AND v.status <> 'infra_error'
  )
ORDER BY r.task_id;
