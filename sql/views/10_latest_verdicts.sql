-- The newest verdict per candidate: a candidate re-verified by a newer verifier version
-- counts once, as its latest outcome. An infra_error is the infrastructure failing, not
-- an outcome: any other verdict of the candidate beats it, however old. Built on
-- raw_verdicts because keeping one row per candidate already drops at-least-once copies;
-- verdict_id breaks ties so that every run picks the same row.
CREATE OR REPLACE VIEW latest_verdicts AS
SELECT *
FROM raw_verdicts
QUALIFY row_number() OVER (
    PARTITION BY candidate_id
    ORDER BY status = 'infra_error', created_at DESC, verdict_id
) = 1;
