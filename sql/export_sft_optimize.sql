-- SFT optimize: the passing keepers of train tasks (sql/views/20_export_keepers.sql) with
-- their perf metrics, only tasks with at least two of them. Pairing (slower -> better by
-- a margin on the domain's metric) happens in lake/export.py: the domain's descriptor
-- (`Domain.perf`) names the metric and which way is better.
SELECT *
FROM export_keepers
QUALIFY count(*) OVER (PARTITION BY task_id) >= 2
ORDER BY domain, task_name, candidate_id;
