"""The monitor: the verifier's trusted side. It holds the secrets, decides every gate, takes every
time and writes every file; its sandbox processes (verifier.sandbox) only compute (DESIGN.md §4)."""
