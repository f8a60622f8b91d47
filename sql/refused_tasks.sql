-- The tasks among these whose reference fails its own verifier, with why: what a run
-- reports as refused (sql/views/15_reference_checks.sql).
-- Parameters: $task_ids.
SELECT task_id, domain, name, verifier, verifier_version, status, code, feedback
FROM reference_checks
WHERE refused AND list_contains($task_ids, task_id)
ORDER BY domain, name;
