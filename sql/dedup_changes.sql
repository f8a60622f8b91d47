-- The dedup rows a pass appends: candidates whose outcome differs from their newest row
-- in latest_dedup, or that have none. Comparing here keeps a rerun on the same lake from
-- appending anything.
-- Parameters: $features (Parquet glob: gid, candidate_id, task_id, domain, exact_key),
-- $outcome (Parquet: gid, keeper_gid, cluster_size, keeper, contaminated, contamination),
-- $params (the settings as canonical JSON, recorded on every row).
WITH features AS (
    SELECT gid, candidate_id, task_id, domain, exact_key
    FROM read_parquet($features)
),
outcome AS (
    SELECT
        f.candidate_id,
        f.task_id,
        f.domain,
        f.exact_key,
        k.candidate_id AS cluster_id,
        o.cluster_size,
        o.keeper,
        o.contaminated,
        o.contamination,
        $params::VARCHAR AS params
    FROM read_parquet($outcome) AS o
    JOIN features AS f ON f.gid = o.gid
    JOIN features AS k ON k.gid = o.keeper_gid
)
SELECT o.*, d.dedup_id AS previous_dedup_id
FROM outcome AS o
LEFT JOIN latest_dedup AS d ON d.candidate_id = o.candidate_id
WHERE d.dedup_id IS NULL
    OR o.exact_key IS DISTINCT FROM d.exact_key
    OR o.cluster_id IS DISTINCT FROM d.cluster_id
    OR o.cluster_size IS DISTINCT FROM d.cluster_size
    OR o.keeper IS DISTINCT FROM d.keeper
    OR o.contaminated IS DISTINCT FROM d.contaminated
    OR o.contamination IS DISTINCT FROM d.contamination
    OR o.params IS DISTINCT FROM d.params
ORDER BY o.domain, o.candidate_id;
