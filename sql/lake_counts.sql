-- Rows per table: deduped (what every query sees) and raw (what was appended). A gap
-- between the two is at-least-once copies that compaction does not remove.
SELECT 'tasks' AS "table", (SELECT count(*) FROM tasks) AS rows, (SELECT count(*) FROM raw_tasks) AS raw_rows
UNION ALL SELECT 'candidates', (SELECT count(*) FROM candidates), (SELECT count(*) FROM raw_candidates)
UNION ALL SELECT 'verdicts', (SELECT count(*) FROM verdicts), (SELECT count(*) FROM raw_verdicts)
UNION ALL SELECT 'artifacts', (SELECT count(*) FROM artifacts), (SELECT count(*) FROM raw_artifacts)
UNION ALL SELECT 'rewards', (SELECT count(*) FROM rewards), (SELECT count(*) FROM raw_rewards)
UNION ALL SELECT 'trajectories', (SELECT count(*) FROM trajectories), (SELECT count(*) FROM raw_trajectories)
UNION ALL SELECT 'dedup', (SELECT count(*) FROM dedup), (SELECT count(*) FROM raw_dedup)
UNION ALL SELECT 'exports', (SELECT count(*) FROM exports), (SELECT count(*) FROM raw_exports)
UNION ALL SELECT 'runs', (SELECT count(*) FROM runs), (SELECT count(*) FROM raw_runs);
