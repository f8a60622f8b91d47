-- Every candidate of the given domains once, with whether its latest verdict passed (the
-- keeper prefers one that did). Streams in any order: the `candidates` view and an ORDER
-- BY would both hold every candidate's code in memory (DuckDB could not spill them under
-- a 300 MB limit on 800 MB of code), so only ids that occur more than once (at-least-once
-- copies, rare) go through a window here.
-- Parameters: $domains (list of domains).
WITH repeated AS (
    SELECT candidate_id
    FROM raw_candidates
    WHERE list_contains($domains, domain)
    GROUP BY candidate_id
    HAVING count(*) > 1
),
once AS (
    SELECT c.candidate_id, c.task_id, c.domain, c.code
    FROM raw_candidates AS c
    WHERE list_contains($domains, c.domain)
        AND c.candidate_id NOT IN (SELECT candidate_id FROM repeated)
    UNION ALL
    SELECT c.candidate_id, c.task_id, c.domain, c.code
    FROM raw_candidates AS c
    WHERE list_contains($domains, c.domain)
        AND c.candidate_id IN (SELECT candidate_id FROM repeated)
    QUALIFY row_number() OVER (PARTITION BY c.candidate_id ORDER BY c.created_at) = 1
)
SELECT
    o.candidate_id,
    o.task_id,
    o.domain,
    o.code,
    coalesce(v.passed, false) AS passed
FROM once AS o
LEFT JOIN (SELECT candidate_id, passed FROM latest_verdicts) AS v
    ON v.candidate_id = o.candidate_id;
