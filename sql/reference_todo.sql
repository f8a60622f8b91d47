-- The reference checks still to do (sql/views/15_reference_checks.sql): tasks among these
-- whose reference has no verdict from the domain's current verifier version (an
-- infra_error one is retried), as sql/pending_verification.sql selects candidates. A
-- `slow` one is measured again on every run until one passes: a speed is a measurement,
-- and a busy machine can hide a reference's gain (seen: an x86asm reference 1.25x faster
-- left `slow` by a loaded CI host, which refused its task for the verifier's version).
-- `again`: its reference was read `slow` before (flows.stages gives the new reading an id
-- of its own, so the newest reading decides).
-- Parameters: $domain, $verifier, $verifier_version, $task_ids.
SELECT
    r.task_id,
    EXISTS (
        SELECT 1
        FROM raw_verdicts AS s
        WHERE s.candidate_id = r.reference_id
          AND s.verifier = $verifier
          AND s.verifier_version = $verifier_version
          AND s.status = 'slow'
    ) AS again
FROM task_references AS r
WHERE r.domain = $domain
  AND list_contains($task_ids, r.task_id)
  AND NOT EXISTS (
      SELECT 1
      FROM verdicts AS v
      WHERE v.candidate_id = r.reference_id
        AND v.verifier = $verifier
        AND v.verifier_version = $verifier_version
        AND v.status NOT IN ('infra_error', 'slow')
  )
ORDER BY r.task_id;
