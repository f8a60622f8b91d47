-- Pass rate per domain, task level, candidate origin and verifier version.
-- Every verdict is one candidate under one verifier version (verdict_id hashes the three).
-- infra_error is the infrastructure failing, not the candidate: counted on its own and
-- left out of the denominator. Verdicts whose task or candidate row is missing still count
-- (level / origin NULL) so that a gap in the lake shows instead of hiding.
SELECT
    v.domain,
    t.level,
    c.origin,
    v.verifier,
    v.verifier_version,
    count(*) AS candidates,
    count(*) FILTER (WHERE v.status = 'infra_error') AS infra_errors,
    count(*) FILTER (WHERE v.status <> 'infra_error') AS judged,
    count(*) FILTER (WHERE v.status = 'pass') AS passed,
    count(*) FILTER (WHERE v.status = 'pass')
        / nullif(count(*) FILTER (WHERE v.status <> 'infra_error'), 0) AS pass_rate
FROM verdicts AS v
LEFT JOIN tasks AS t ON t.task_id = v.task_id
LEFT JOIN candidates AS c ON c.candidate_id = v.candidate_id
GROUP BY v.domain, t.level, c.origin, v.verifier, v.verifier_version
ORDER BY v.domain, t.level NULLS LAST, c.origin NULLS LAST, v.verifier, v.verifier_version;
