-- One row per tool a verdict's verifier reported (`verdicts.toolchain`: tool -> version):
-- which tool versions judged which verdicts.
CREATE OR REPLACE VIEW toolchains AS
SELECT
    v.verdict_id,
    v.domain,
    v.verifier,
    v.verifier_version,
    j.key AS tool,
    j.value ->> '$' AS version
FROM verdicts AS v, json_each(CASE WHEN json_valid(v.toolchain) THEN v.toolchain END) AS j;
