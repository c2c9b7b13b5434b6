# Stage 6: figures and tables (flagged for `snakemake --report report.html`).


rule report:
    input:
        records=f"{R}/records.parquet",
        library=f"{R}/library.parquet",
        curation=f"{R}/curation/report.json",
        fits=ground_truth_fits,
        reference_arms=f"{R}/ground_truth/arms_d{REFERENCE[0]}.parquet",
        reference_subset=f"{R}/subsets/K{REFERENCE[1]}.csv",
    output:
        summary=report(
            f"{R}/report/summary.csv",
            caption="../report/summary.rst",
            category="3. Screens",
        ),
        declared=report(
            f"{R}/report/declared_compounds.csv",
            caption="../report/declared.rst",
            category="4. Declared compounds",
        ),
        ground_truth=report(
            f"{R}/report/ground_truth.csv",
            caption="../report/ground_truth.rst",
            category="2. Ground truth",
        ),
        structures=report(
            f"{R}/report/declared_structures.png",
            caption="../report/structures.rst",
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
        studies=config["screen"]["studies"],
        algorithms=config["algorithms"],
        reference=REFERENCE,
        title=config["report"]["title"],
        mols_per_row=config["report"]["structures_per_row"],
    script:
        "../scripts/report.py"
