-- One row per key of a run's `counts` JSON (what each flow run did: rows generated,
-- verified, written, seconds per stage, ...). `value` is the number where the count is
-- one, else null; `json` is the raw value (per-stage statistics stay whole there).
CREATE OR REPLACE VIEW run_counts AS
SELECT
    r.run_id,
    r.flow,
    r.status,
    r.started_at,
    j.key,
    CASE WHEN j.type IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST(j.value AS DOUBLE) END
        AS value,
    j.value AS json
FROM runs AS r, json_each(CASE WHEN json_valid(r.counts) THEN r.counts END) AS j;
