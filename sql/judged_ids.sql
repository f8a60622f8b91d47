-- The candidates that already have a verdict (not an infra_error) from this verifier
-- version: the reward service reads them once per version, then asks the lake
-- (judged_verdicts) only about those, instead of scanning it for every new candidate.
-- Parameters: $verifier, $verifier_version.
SELECT DISTINCT candidate_id
FROM raw_verdicts
WHERE verifier = $verifier
  AND verifier_version = $verifier_version
  AND status <> 'infra_error';
