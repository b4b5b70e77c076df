-- A task's committed attempts in one campaign, in iteration order (for resume).
SELECT a.attempt_id, a.task_id, a.iteration, a.stage, a.feasible, a.failed_gate, a.candidate_ms,
       a.speedup, a.ci_low, a.ci_high, a.reward, a.reward_normalized, a.feedback, a.code,
       a.gates_json, a.outcome_owner, a.machine_reason, a.flagged, a.timing_flag,
       a.input_tokens + a.output_tokens AS tokens, a.llm_seconds + a.verify_seconds AS seconds,
       i.item_id AS trace_item_id
FROM attempts AS a
LEFT JOIN items AS i ON i.source_attempt_id = a.attempt_id AND i.kind = 'trace'
WHERE a.campaign_id = $campaign_id AND a.task_id = $task_id
ORDER BY a.iteration
