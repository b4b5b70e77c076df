-- A failed attempt and what fixed it: its gate, feedback and code, and the first later attempt of the
-- same campaign and task that passed that gate (null columns when none did). A gate is passed when its
-- attempts column says so (hack_passed, compile_passed, correct, latency_passed).
WITH failed AS (
    SELECT attempt_id, campaign_id, task_id, iteration, failed_gate, feedback, code
    FROM attempts
    WHERE attempt_id = $attempt_id
),
fixes AS (
    SELECT a.attempt_id, a.iteration, a.code
    FROM attempts AS a, failed AS f
    WHERE a.campaign_id = f.campaign_id AND a.task_id = f.task_id AND a.iteration > f.iteration
      AND a.code IS NOT NULL
      AND CASE f.failed_gate WHEN 'hack' THEN a.hack_passed WHEN 'compile' THEN a.compile_passed
                             WHEN 'correctness' THEN a.correct WHEN 'latency' THEN a.latency_passed
                             ELSE false END
    ORDER BY a.iteration
    LIMIT 1
)
SELECT f.failed_gate, f.iteration, f.feedback, f.code,
       x.iteration AS fix_iteration, x.code AS fix_code
FROM failed AS f
LEFT JOIN fixes AS x ON true
