-- The train tasks an export may build prompts from (the whole row: task_from_row reads it).
SELECT *
FROM tasks
WHERE split = 'train'
ORDER BY domain, name, task_id;
