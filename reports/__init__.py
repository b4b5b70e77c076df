"""reports: metrics over the memory lake, plots, HTML/Markdown rendering, data-quality suites."""
