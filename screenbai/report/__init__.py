"""Figures and tables of a screening study, from the workflow's run records.

tables.py (the numbers, each defined once: tests to stop, error rates, declared potency; markdown
and HTML tables), figures.py (the plots), summary.py (the summary page, markdown and HTML), writer.py
(:func:`write_report`: all of them into the workflow's files).
"""

from .figures import (
    plot_declared_potency,
    plot_declared_rank,
    plot_error_rate,
    plot_pulls_per_arm,
    plot_samples,
    structure_grid,
)
from .summary import IMBALANCED, label_warning, summary_page
from .tables import (
    UNINFORMATIVE,
    algorithm_guarantees,
    consensus,
    declared_compounds,
    ground_truth_table,
    html_table,
    markdown_table,
    report_tables,
    summarize_screens,
    write_generated_block,
)
from .writer import write_report

__all__ = [
    "IMBALANCED",
    "UNINFORMATIVE",
    "algorithm_guarantees",
    "consensus",
    "declared_compounds",
    "ground_truth_table",
    "html_table",
    "label_warning",
    "markdown_table",
    "plot_declared_potency",
    "plot_declared_rank",
    "plot_error_rate",
    "plot_pulls_per_arm",
    "plot_samples",
    "report_tables",
    "structure_grid",
    "summarize_screens",
    "summary_page",
    "write_generated_block",
    "write_report",
]
