-- One row per top-level key of a verdict's `metrics` JSON. `value` is the number where
-- the JSON value is a number (a boolean as 1 or 0, so `avg(value)` is a rate), else null;
-- `text` is a scalar as text (a string unquoted); `json` is the raw JSON value (nested
-- objects and lists stay whole there) and `type` its JSON type. Which keys exist is each
-- verifier's own business: group by domain (or verifier) before comparing them.
CREATE OR REPLACE VIEW metrics AS
SELECT
    v.verdict_id,
    v.candidate_id,
    v.task_id,
    v.domain,
    v.verifier,
    v.verifier_version,
    v.status,
    j.key,
    CASE
        WHEN j.type IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST(j.value AS DOUBLE)
        WHEN j.type = 'BOOLEAN' THEN CASE WHEN j.value::VARCHAR = 'true' THEN 1.0 ELSE 0.0 END
    END AS value,
    CASE WHEN j.type NOT IN ('OBJECT', 'ARRAY', 'NULL') THEN j.value ->> '$' END AS text,
    j.value AS json,
    lower(j.type) AS type,
    v.created_at
FROM verdicts AS v, json_each(CASE WHEN json_valid(v.metrics) THEN v.metrics END) AS j;
