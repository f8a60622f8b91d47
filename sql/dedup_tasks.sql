-- Every task with what decontamination reads: the holdout split's references and
-- requirements are the text no train candidate may share.
SELECT task_id, domain, name, split, requirement, reference
FROM tasks
ORDER BY domain, name, task_id;
