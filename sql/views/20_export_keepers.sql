-- What SFT exports teach: every passing dedup keeper of a train task that is not
-- contaminated, with its verdict. `latest_verdicts` puts an infra_error last, so status =
-- 'pass' also means the candidate's current outcome is a real one; a candidate with no
-- dedup row is left out (dedup has not seen it yet), and so is every candidate of a task
-- whose reference fails (reference_checks).
CREATE OR REPLACE VIEW export_keepers AS
SELECT
    c.candidate_id,
    c.task_id,
    c.domain,
    c.origin,
    c.code,
    t.name AS task_name,
    t.level,
    v.verdict_id,
    v.verifier,
    v.verifier_version,
    v.toolchain,
    v.metrics
FROM candidates AS c
JOIN tasks AS t ON t.task_id = c.task_id
JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
JOIN latest_dedup AS d ON d.candidate_id = c.candidate_id
WHERE t.split = 'train'
    AND v.status = 'pass'
    AND d.keeper
    AND NOT d.contaminated
    AND c.task_id NOT IN (SELECT task_id FROM reference_checks WHERE refused);
