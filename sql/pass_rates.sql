-- Pass rate per domain, task level, candidate origin and verifier version.
-- Every verdict is one candidate under one verifier version (verdict_id hashes the three).
-- infra_error is the infrastructure failing, not the candidate: counted on its own and
-- left out of the denominator. Verdicts whose task or candidate row is missing still count
-- (level / origin NULL) so that a gap in the lake shows instead of hiding; a reference's
-- check at ingest has no candidate row when the run's channel makes no reference
-- candidates (a model's), and counts as origin 'reference'.
SELECT
    v.domain,
    t.level,
    coalesce(c.origin, CASE WHEN v.candidate_id = r.reference_id THEN 'reference' END)
        AS origin,
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
LEFT JOIN task_references AS r ON r.task_id = v.task_id
GROUP BY ALL
ORDER BY v.domain, t.level NULLS LAST, origin NULLS LAST, v.verifier, v.verifier_version;
