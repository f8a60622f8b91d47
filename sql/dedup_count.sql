-- How many candidates `dedup_input` will stream (ids only: cheap), to size its partitions.
-- Parameters: $domains (list of domains).
SELECT count(DISTINCT candidate_id) AS candidates
FROM raw_candidates
WHERE list_contains($domains, domain);
