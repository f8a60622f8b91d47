-- Time per gate (one row per check a verifier ran), from every verdict: where the
-- verification budget goes, and which gate stops candidates.
WITH gates AS (
    SELECT domain, verifier, unnest(checks) AS c
    FROM verdicts
)
SELECT
    domain,
    verifier,
    c.name AS gate,
    count(*) AS runs,
    count(*) FILTER (WHERE NOT c.ok) AS stopped,
    median(c.seconds) AS median_s,
    quantile_cont(c.seconds, 0.9) AS p90_s,
    sum(c.seconds) AS total_s
FROM gates
GROUP BY domain, verifier, c.name
ORDER BY domain, verifier, total_s DESC;
