-- DPO: per train task, the chosen pool (passing dedup keepers) and the rejected pool
-- (current outcome a failure of the candidate, never infra_error, not contaminated),
-- only for tasks that have both. A rejected candidate need not be a keeper: a near copy
-- of the reference that fails is the most informative negative there is.
-- `compiled`: the verdict has at least one `build`-stage check and every `build`-stage
-- check in it let the candidate through (stages come from the domain's descriptor, never
-- a gate's name; the base's `format` gate is one). Without $other_failures only those are
-- rejected candidates; `functional` ranks the failures that compiled and then computed
-- the wrong thing first.
WITH pool AS (
    SELECT
        CASE WHEN v.status = 'pass' THEN 'chosen' ELSE 'rejected' END AS role,
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
        v.status,
        v.category,
        len(list_filter(v.checks, lambda ch: ch.stage = 'build')) > 0
            AND len(list_filter(v.checks, lambda ch: ch.stage = 'build' AND ch.ok IS NOT TRUE)) = 0
            AS compiled,
        v.status = 'wrong_answer' OR v.category = 'functional' AS functional
    FROM candidates AS c
    JOIN tasks AS t ON t.task_id = c.task_id
    JOIN latest_verdicts AS v ON v.candidate_id = c.candidate_id
    LEFT JOIN latest_dedup AS d ON d.candidate_id = c.candidate_id
    WHERE t.split = 'train'
        AND t.task_id NOT IN (SELECT task_id FROM reference_checks WHERE refused)
        AND v.status <> 'infra_error'
        AND (
            (v.status = 'pass' AND d.keeper AND NOT d.contaminated)
            OR (v.status <> 'pass' AND NOT coalesce(d.contaminated, false))
        )
),
eligible AS (
    SELECT *
    FROM pool
    WHERE role = 'chosen' OR compiled OR $other_failures
)
SELECT *
FROM eligible
QUALIFY count(*) FILTER (WHERE role = 'chosen') OVER (PARTITION BY task_id) > 0
    AND count(*) FILTER (WHERE role = 'rejected') OVER (PARTITION BY task_id) > 0
ORDER BY domain, task_name, role, candidate_id;
