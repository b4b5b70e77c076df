"""flows: Prefect flows (build_benchmark, campaign, report) and the entrypoints prefect.yaml names."""
