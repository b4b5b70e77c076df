"""memory_lake: the agent's memory and the users' data lake of experience.

Append-only Parquet tables under one root, read by DuckDB. Imports nothing else of the project.
"""
