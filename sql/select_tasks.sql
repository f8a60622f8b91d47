-- The tasks a run works on: its domains, and its tasks filter (task names; NULL = all).
-- Parameters: $domains (list), $names (list or NULL).
SELECT task_id, domain, name, split
FROM tasks
WHERE list_contains($domains, domain)
  AND ($names IS NULL OR list_contains($names, name))
ORDER BY domain, name, task_id;
