# Stage 6: figures, tables and the summary page (flagged for `snakemake --report report.html`,
# whose landing page shows the summary page: workflow/report/workflow.rst).


rule report:
    input:
        records=f"{R}/records.parquet",
        library=f"{R}/library.parquet",
        curation=f"{R}/curation/report.json",
        label=f"{R}/curation/label.json",
        fits=ground_truth_fits,
        reference_arms=reference_arms,
        reference_subset=reference_subset,
        # the measured error rates each algorithm's guarantee is quoted with (docs/error_rates.md)
        error_rates=f"{workflow.basedir}/docs/error_rates_records.csv",
    output:
        page=report(
            f"{R}/report/summary.html",
            caption="../report/page.rst",
            category="1. Summary",
        ),
        summary_html=report(
            f"{R}/report/summary_table.html",
            caption="../report/summary.rst",
            category="3. Screens",
        ),
        declared_html=report(
            f"{R}/report/declared_compounds.html",
            caption="../report/declared.rst",
            category="4. Declared compounds",
        ),
        ground_truth_html=report(
            f"{R}/report/ground_truth.html",
            caption="../report/ground_truth.rst",
            category="2. Ground truth",
        ),
        structures=report(
            f"{R}/report/declared_structures.png",
            caption="../report/structures.rst",
            category="4. Declared compounds",
        ),
        potency=report(
            f"{R}/report/declared_potency.png",
            caption="../report/potency.rst",
            category="4. Declared compounds",
        ),
        pulls=report(
            f"{R}/report/pulls_per_arm.png",
            caption="../report/pulls.rst",
            category="3. Screens",
        ),
        studies=[
            report(
                f"{R}/report/study_{study}.png",
                caption="../report/study.rst",
                category="3. Screens",
            )
            for study in STUDIES
        ],
        summary=f"{R}/report/summary.csv",
        declared=f"{R}/report/declared_compounds.csv",
        ground_truth=f"{R}/report/ground_truth.csv",
        markdown=f"{R}/report/summary.md",
    log:
        f"{R}/logs/report.log",
    conda:
        "../envs/screenbai.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        studies=report_studies,
        algorithms=config["algorithms"],
        reference=report_reference,
        title=TITLE,
        activity=ACTIVITY,
        mols_per_row=config["report"]["structures_per_row"],
    script:
        "../scripts/report.py"
