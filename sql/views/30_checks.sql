-- One row per gate a verdict ran (`verdicts.checks` unnested), in the order the gates ran
-- (`position`, from 1): a verdict stops at its first failing gate, so the last row of a
-- failed verdict is the gate that stopped it. Every verdict of the lake, re-verifications
-- included: join `latest_verdicts` on verdict_id for current outcomes only.
CREATE OR REPLACE VIEW checks AS
SELECT
    verdict_id,
    candidate_id,
    task_id,
    domain,
    verifier,
    verifier_version,
    position,
    c.name AS gate,
    c.stage,
    c.ok,
    c.seconds,
    c.detail,
    run_id,
    created_at
FROM (
    SELECT *, generate_subscripts(checks, 1) AS position, unnest(checks) AS c
    FROM verdicts
);
