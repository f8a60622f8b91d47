-- How many candidates each task already has from one generation channel: the generate
-- stage tops up the tasks that have fewer than it wants (a killed run's leftovers, or a
-- later run asking for more per task).
-- Parameters: $task_ids, $origins (the channel's origins), $generator (LIKE pattern on
-- candidates.generator: '%' for the offline channel, 'openai:<model>' for a model),
-- $capped_origin (the origin whose count `--candidates-per-task` sets: `have_capped`).
SELECT t.task_id,
       count(c.candidate_id) AS have,
       count(c.candidate_id) FILTER (WHERE c.origin = $capped_origin) AS have_capped
FROM tasks AS t
LEFT JOIN candidates AS c
    ON c.task_id = t.task_id
   AND list_contains($origins, c.origin)
   AND c.generator LIKE $generator
WHERE list_contains($task_ids, t.task_id)
GROUP BY t.task_id
ORDER BY t.task_id;
