-- SFT direct: requirement -> verified code. Every passing dedup keeper of a train task,
-- one row each. `latest_verdicts` puts an infra_error last, so status = 'pass' also means
-- the candidate's current outcome is a real one; a candidate with no dedup row is left out
-- (dedup has not seen it yet).
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
    v.toolchain
FROM candidates AS c
JOIN tasks AS t ON t.task_id = c.task_id
JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
JOIN latest_dedup AS d ON d.candidate_id = c.candidate_id
WHERE t.split = 'train'
    AND v.status = 'pass'
    AND d.keeper
    AND NOT d.contaminated
ORDER BY c.domain, t.name, c.candidate_id;
