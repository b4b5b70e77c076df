-- One committed attempt, every column (resume completes its side effects from it).
SELECT * FROM attempts WHERE attempt_id = $attempt_id
