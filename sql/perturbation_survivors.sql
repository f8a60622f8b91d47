-- Perturbations that passed verification, by operator: each is either a mutation that
-- does not change behaviour (an equivalent mutant) or a hole in the task's checks.
SELECT
    c.generator,
    count(*) AS perturbed,
    count(*) FILTER (WHERE v.status = 'pass') AS survived,
    list(t.name ORDER BY t.name) FILTER (WHERE v.status = 'pass') AS survived_on
FROM candidates AS c
JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
LEFT JOIN tasks AS t ON t.task_id = c.task_id
WHERE c.origin = 'perturb'
GROUP BY c.generator
ORDER BY survived DESC, c.generator;
