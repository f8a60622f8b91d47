-- The newest dedup outcome per candidate. Each dedup pass recomputes clusters over the
-- whole lake and appends a row only for candidates whose outcome changed (dedup_id hashes
-- the outcome), so the newest row is the current one; dedup_id breaks ties.
CREATE OR REPLACE VIEW latest_dedup AS
SELECT *
FROM raw_dedup
QUALIFY row_number() OVER (
    PARTITION BY candidate_id
    ORDER BY created_at DESC, dedup_id
) = 1;
