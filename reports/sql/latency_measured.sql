-- Whether a campaign measured any latency on its machine: n_timed = attempts with a paired speedup;
-- latency_unavailable = the first "latency unavailable here: ..." reason among its gates (the verifier's
-- words when the latency gate cannot run on the machine). Parameters: $campaign_ids VARCHAR[].
SELECT campaign_id,
       count(*) FILTER (WHERE speedup > 0 AND isfinite(speedup)) AS n_timed,
       min(regexp_extract(gates_json, '"(latency unavailable here: [^"]*)"', 1))
           FILTER (WHERE gates_json LIKE '%"latency unavailable here:%') AS latency_unavailable
FROM attempts
WHERE list_contains($campaign_ids, campaign_id)
GROUP BY campaign_id
