-- SFT repair: trajectories that ended in a pass after at least one failed attempt, with
-- every turn's code and the verdict the next attempt was made from (status, feedback).
-- The final fix's current outcome is a pass and it is not contaminated (its dedup row
-- says so). It need not be a keeper: many chains converge on one verified variant, and a
-- row is told apart by its failed attempts, which the export filters for near duplicates
-- instead. Every earlier turn must be a real failure: its verdict
-- is no infra_error (that feedback is the infrastructure's, not the code's) and no
-- anti-cheat rejection (an attack, not a mistake: see below), its current
-- outcome is still a failure (a re-verification that passes it makes the "fix" a
-- rewrite), and its code is not contaminated. A trajectory with a turn whose candidate or
-- verdict is missing from the lake is left out whole.
WITH turns AS (
    SELECT
        j.trajectory_id,
        j.task_id,
        j.domain,
        j.rounds,
        u.idx,
        u.turn.candidate_id AS candidate_id,
        u.turn.verdict_id AS verdict_id
    FROM trajectories AS j,
        unnest(j.turns) WITH ORDINALITY AS u(turn, idx)
    WHERE j.outcome = 'pass' AND j.rounds >= 2 AND len(j.turns) = j.rounds
),
joined AS (
    SELECT
        s.*,
        c.code,
        c.origin,
        v.status,
        v.feedback,
        lv.verdict_id AS latest_verdict_id,
        lv.status AS latest_status,
        lv.verifier AS latest_verifier,
        lv.verifier_version AS latest_verifier_version,
        lv.toolchain AS latest_toolchain,
        d.keeper,
        d.contaminated
    FROM turns AS s
    JOIN candidates AS c ON c.candidate_id = s.candidate_id AND c.task_id = s.task_id
    JOIN verdicts AS v ON v.verdict_id = s.verdict_id AND v.candidate_id = s.candidate_id
    JOIN latest_verdicts AS lv ON lv.candidate_id = s.candidate_id
    LEFT JOIN latest_dedup AS d ON d.candidate_id = s.candidate_id
),
ok AS (
    SELECT
        *,
        CASE
            WHEN idx = rounds THEN latest_status = 'pass' AND contaminated = false
            -- an attempt the anti-cheat rules rejected is an attack, not a mistake to
            -- learn to fix: TRL trains on every assistant turn, so it would teach it
            ELSE status NOT IN ('pass', 'infra_error', 'rejected')
                AND latest_status <> 'pass'
                AND NOT coalesce(contaminated, false)
        END AS turn_ok
    FROM joined
)
SELECT
    o.trajectory_id,
    o.task_id,
    o.domain,
    t.name AS task_name,
    t.level,
    o.rounds,
    max(o.candidate_id) FILTER (WHERE o.idx = o.rounds) AS candidate_id,
    max(o.origin) FILTER (WHERE o.idx = o.rounds) AS origin,
    max(o.latest_verdict_id) FILTER (WHERE o.idx = o.rounds) AS verdict_id,
    max(o.latest_verifier) FILTER (WHERE o.idx = o.rounds) AS verifier,
    max(o.latest_verifier_version) FILTER (WHERE o.idx = o.rounds) AS verifier_version,
    max(o.latest_toolchain) FILTER (WHERE o.idx = o.rounds) AS toolchain,
    list(
        {
            'candidate_id': o.candidate_id,
            'verdict_id': o.verdict_id,
            'code': o.code,
            'status': o.status,
            'feedback': o.feedback
        }
        ORDER BY o.idx
    ) AS turns
FROM ok AS o
JOIN tasks AS t ON t.task_id = o.task_id
WHERE t.split = 'train'
  AND t.task_id NOT IN (SELECT task_id FROM reference_checks WHERE refused)
GROUP BY ALL
HAVING count(*) = o.rounds AND bool_and(coalesce(o.turn_ok, false))
ORDER BY o.domain, task_name, o.trajectory_id;
