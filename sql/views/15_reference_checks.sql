-- Each task's reference as its own verifier last judged it: the check a task passes
-- before a run accepts it. The generate stage's ingest verifies each reference once per
-- verifier version and stores the verdict under the reference's candidate id
-- (sha256(task_id, NUL, code), as every candidate id): the offline channel's reference
-- candidate, or a model's answer equal to the reference, finds that verdict already
-- there. A reference that fails its own verifier would fail every candidate of the task
-- (seen: a CAD reference that raises made each candidate an infra_error, retried
-- forever): such a task is `refused`, and no stage selects it (sql/select_tasks.sql) nor
-- exports it. An infra_error is the machine, retried, except `harness_error` (the task's
-- own harness is broken); a `slow` reference is measured again on each run
-- (sql/reference_todo.sql), and its latest verdict decides.
CREATE OR REPLACE VIEW task_references AS
SELECT task_id, domain, name, sha256(task_id || chr(0) || reference) AS reference_id
FROM tasks
WHERE coalesce(reference, '') <> '';

CREATE OR REPLACE VIEW reference_checks AS
SELECT
    r.task_id,
    r.domain,
    r.name,
    r.reference_id,
    v.verifier,
    v.verifier_version,
    v.status,
    v.code,
    v.feedback,
    v.status <> 'pass' AND (v.status <> 'infra_error' OR v.code = 'harness_error') AS refused
FROM task_references AS r
JOIN latest_verdicts AS v ON v.candidate_id = r.reference_id AND v.task_id = r.task_id;
