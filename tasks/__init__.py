"""tasks: thin Prefect task wrappers over the core packages (retries, caching, tags)."""
