-- SFT direct: requirement -> verified code, one row per passing keeper of a train task
-- (sql/views/20_export_keepers.sql says which).
SELECT * EXCLUDE (metrics)
FROM export_keepers
ORDER BY domain, task_name, candidate_id;
