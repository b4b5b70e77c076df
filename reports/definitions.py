"""The definition of every metric the report shows, in words, with the SQL file that computes it.

The report prints these next to the numbers, so a reader never has to guess what a column means.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDefinition:
    key: str  # the column / metric name in metrics.parquet
    title: str
    definition: str
    sql: str  # reports/sql/<sql>.sql


DEFINITIONS: tuple[MetricDefinition, ...] = (
    MetricDefinition(
        "n_tasks", "tasks",
        "Distinct tasks with at least one attempt in the campaign (the denominator of every task share).",
        "group_metrics"),
    MetricDefinition(
        "compile_rate_tasks", "compile rate (tasks)",
        "Share of tasks with at least one attempt that passed the compile gate within the budget "
        "(attempts with iteration < the campaign's budget; all recorded attempts when none is set).",
        "group_metrics"),
    MetricDefinition(
        "correct_rate_tasks", "correctness (tasks)",
        "Share of tasks with at least one attempt whose correctness gate passed (attempts.correct) within the budget.",
        "group_metrics"),
    MetricDefinition(
        "compile_rate_attempts", "compile rate (attempts)", "Compiling attempts / all attempts.", "group_metrics"),
    MetricDefinition(
        "correct_rate_attempts", "correctness (attempts)", "Correct attempts / all attempts.", "group_metrics"),
    MetricDefinition(
        "draft_speedup_median", "speedup over first draft (median, IQR)",
        "Per task with a timed feasible kernel (feasible = hack, compile and correctness gates passed): the "
        "best kernel's speedup over the task's first feasible draft. Measured when the task ended: the draft, "
        "the best kernel and the PyTorch reference timed in the same rounds of one paired verification, the "
        "ratio being the median over rounds of draft time / best time, with its own 95% bootstrap CI "
        "(comparisons table); exactly 1 when the best kernel is the draft. Where no such run exists (lakes "
        "from before it, a comparison that failed) the ratio of the two kernels' medians against the "
        "reference from their own verifications, its interval the conservative bound best.ci_low / "
        "draft.ci_high .. best.ci_high / draft.ci_low (draft_speedup_source says which). Median and "
        "interquartile range over tasks; the interval shown is the median of the per-task interval bounds. "
        "The paper's headline metric.",
        "task_outcomes"),
    MetricDefinition(
        "speedup_geomean", "speedup over PyTorch (geomean)",
        "Per task its best kernel: among feasible kernels whose timing is not flagged implausible, the one "
        "with the highest median speedup over the PyTorch reference (the median over rounds of reference time "
        "/ candidate time, both timed in each round of one verification; memory_lake's best_kernels.sql, the "
        "definition the campaign log and the lake use too). The figure is the geometric mean of those medians "
        "over tasks; its interval is the geometric mean of the best kernels' 95% bootstrap CI bounds (the "
        "timing uncertainty, not a sampling interval over tasks).",
        "group_metrics"),
    MetricDefinition(
        "fast_p", "fast_p (p = 0, 1, 1.5, 2)",
        "KernelBench's definition: share of ALL tasks of the group that have a correct kernel with "
        "speedup > p. fast_0 = correctness (tasks); for p > 0 the best kernel's median speedup. "
        "fast_1_ci_low is the conservative bound: the share whose best kernel's 95% CI lies above 1.",
        "group_metrics"),
    MetricDefinition(
        "n_machine_outcomes", "the machine's outcomes",
        "Attempts whose verification failed for the machine's reasons, not the kernel's (an infrastructure "
        "error, or a gate this machine cannot run that the stage needs: attempts.outcome_owner = 'machine', "
        "with attempts.machine_reason). Never rewarded; counted in attempts and LLM calls, left out of the "
        "per-attempt compile and correctness rates. A campaign whose machine timed no kernel because the "
        "latency gate cannot run there shows fast_p (p > 0) and speedups as 'not measured on this machine'.",
        "machine_outcomes"),
    MetricDefinition(
        "iterations_to_first_feasible_median", "attempts to first feasible",
        "Per task that reached a feasible kernel: the attempts it used, i.e. the first feasible kernel's "
        "iteration + 1 (iterations are 0-based everywhere: the lake, the campaign summary, this report's "
        "tables and plots); median and mean over those tasks.",
        "group_metrics"),
    MetricDefinition(
        "n_flagged_best", "flagged timings",
        "The verifier flags a timing for review when it is noisy (either side's round-to-round IQR/median "
        "above 25%: other work shared the cores) or implausible (faster than this machine's measured "
        "roofline allows, or beyond the 10x plausibility bound where no roofline exists). A noisy timing "
        "counts at its median like any other and shows a wide CI; an implausible one never makes a kernel "
        "the best and is left out of every speedup figure. Columns: tasks whose best kernel's timing was "
        "noisy / tasks with an implausible feasible timing.",
        "task_outcomes"),
    MetricDefinition(
        "llm_calls", "LLM calls",
        "Attempts (one generation each) plus recorded non-attempt calls (llm_calls, e.g. distillation).",
        "group_metrics"),
    MetricDefinition(
        "tokens", "tokens",
        "Input + output tokens of attempts and recorded non-attempt LLM calls, as the provider reported them; "
        "for a response that carried no usage, the len(text)/4 estimate, counted again as 'estimated'.",
        "group_metrics"),
    MetricDefinition(
        "cost_usd", "cost (USD)",
        "Recorded LLM cost of attempts and non-attempt calls: the provider's reported price where the response "
        "carried one, else the tokens at list price (estimated tokens give an estimated cost).", "group_metrics"),
    MetricDefinition(
        "verify_seconds", "verifier seconds", "Sum of the verifier's wall time over attempts.", "group_metrics"),
    MetricDefinition(
        "cost_usd_per_correct_kernel", "per correct kernel",
        "LLM calls, tokens, cost and verifier seconds divided by the number of correct kernels: a task's correct "
        "attempts, an identical resubmission (same code hash) counted once.",
        "group_metrics"),
    MetricDefinition(
        "cumulative_correct_rate", "learning curves",
        "At iteration x (0-based): share of ALL the campaign's tasks with a compiling / correct kernel at some "
        "iteration <= x.",
        "learning_curves"),
    MetricDefinition(
        "q_value", "Q trajectories",
        "For the most retrieved items per stage (retrieval count in the campaigns' attempts): q_after of "
        "each value update of that stage, in seq order; the last point is the item's current Q.",
        "q_trajectories"),
    MetricDefinition(
        "solves_with_item_in_context", "provenance of first solves",
        "Per item: tasks whose first correct attempt had the item in its retrieved context, and tasks "
        "whose attempts up to that first solve retrieved it at all.",
        "provenance_items"),
    MetricDefinition(
        "roof_fraction", "roofline",
        "Per solved task, its best kernel: bytes moved (inputs + outputs + parameters, each once: the lower "
        "bound of traffic) and FLOPs (torch's FlopCounterMode on the reference plus one per output element "
        "of other compute ops) over the measured time, against the machine's measured peaks recorded with "
        "the attempt (STREAM-style triad bandwidth at the working set's size, fp32 FMA throughput). "
        "roof_fraction = the shortest time those peaks allow / the measured time (1 = on the roof).",
        "roofline_points"),
)
