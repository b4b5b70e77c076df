-- The last seq of value_updates (the one-row clock every Q-update transaction rewrites).
SELECT seq FROM value_clock
