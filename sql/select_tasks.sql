-- The tasks a run works on: its domains, and its tasks filter (task names; NULL = all),
-- less the tasks refused because their reference fails (sql/views/15_reference_checks.sql).
-- Parameters: $domains (list), $names (list or NULL).
SELECT t.task_id, t.domain, t.name, t.split
FROM tasks AS t
WHERE list_contains($domains, t.domain)
  AND ($names IS NULL OR list_contains($names, t.name))
  AND t.task_id NOT IN (SELECT task_id FROM reference_checks WHERE refused)
ORDER BY t.domain, t.name, t.task_id;
