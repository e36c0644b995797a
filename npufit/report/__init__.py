"""report: CheckReport / SplitPlan / BenchResult -> terminal, JSON, Markdown, HTML."""
