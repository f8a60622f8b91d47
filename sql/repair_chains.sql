-- The repair chain ending at each of $ids, root first: one turn per candidate with its
-- latest verdict. Parameter: $ids (candidate ids).
WITH RECURSIVE chain(end_id, candidate_id, parent_id, depth) AS (
    SELECT candidate_id, candidate_id, parent_id, 0
    FROM candidates
    WHERE list_contains($ids, candidate_id)
    UNION ALL
    SELECT chain.end_id, c.candidate_id, c.parent_id, chain.depth + 1
    FROM candidates AS c
    JOIN chain ON c.candidate_id = chain.parent_id
    WHERE chain.depth < 64
)
SELECT
    chain.end_id,
    list(
        struct_pack(candidate_id := chain.candidate_id, verdict_id := v.verdict_id,
                    status := v.status)
        ORDER BY chain.depth DESC
    ) AS turns
FROM chain
JOIN latest_verdicts AS v ON v.candidate_id = chain.candidate_id
GROUP BY chain.end_id;
