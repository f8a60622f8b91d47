-- Provenance of an export: for each verdict its rows rest on ($verdict_ids), the candidate
-- it judged (origin and generator: which channel wrote the code), its status and the names
-- of the gates it ran, in order (what "passed" meant for that verdict).
SELECT
    v.verdict_id,
    v.domain,
    v.status,
    list_transform(v.checks, lambda ch: ch.name) AS gates,
    c.candidate_id,
    c.origin,
    c.generator
FROM verdicts AS v
JOIN candidates AS c ON c.candidate_id = v.candidate_id
WHERE v.verdict_id IN (SELECT unnest($verdict_ids::VARCHAR[]))
ORDER BY v.verdict_id;
