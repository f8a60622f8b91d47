-- The verdict each of the given candidates already has from this verifier version (its
-- infra_errors excluded: the infrastructure's failure is no judgement): what the reward
-- service answers from the lake instead of verifying again. The earliest such verdict
-- per candidate (a version judges a candidate once; a racing copy is the same judgement).
-- Parameters: $verifier, $verifier_version, $candidate_ids (list of candidate ids).
SELECT v.*
FROM verdicts AS v
WHERE list_contains($candidate_ids, v.candidate_id)
  AND v.verifier = $verifier
  AND v.verifier_version = $verifier_version
  AND v.status <> 'infra_error'
QUALIFY row_number() OVER (PARTITION BY v.candidate_id ORDER BY v.created_at, v.verdict_id) = 1
ORDER BY v.candidate_id;
