"""The sandbox: a child process per verification (own session, rlimits, seccomp, private temp
dir, deadlines) and a framed, nonce-checked channel back to the trusted parent."""
