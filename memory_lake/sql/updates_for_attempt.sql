-- Value updates already applied for an attempt (so a resumed step never applies them twice).
SELECT item_id, stage FROM value_updates WHERE attempt_id = $attempt_id
