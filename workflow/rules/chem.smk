# Stages 2-4: curate, featurize (Morgan fingerprints into a chunked store, PCA to each d), ground truth per d.


checkpoint curate:
    input:
        raw=f"{R}/raw/activities.parquet",
        provenance=f"{R}/raw/provenance.json",
    output:
        library=f"{R}/library.parquet",
        report_json=f"{R}/curation/report.json",
        label=f"{R}/curation/label.json",
        counts=f"{R}/curation/counts.csv",
    log:
        f"{R}/logs/curate.log",
    conda:
        "../envs/screenbai.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        curation=CURATION,
        activity_types=ACTIVITY_TYPES,
        label=LABEL,
        sizes=SIZES,
        dims=DIMS,
        n_bits=config["featurize"]["n_bits"],
        clip_K=SCREEN["clip_K"],
        algorithms=config["algorithms"],
        studies=SCREEN["studies"],
        algorithm_modules=MODULES,
        max_samples=SCREEN["max_samples"],
        activity_label=ACTIVITY,
        pchembl_of=PCHEMBL_OF,
    script:
        "../scripts/curate.py"


rule fingerprints:
    input:
        library=f"{R}/library.parquet",
    output:
        store=directory(f"{R}/features/fingerprints"),
    log:
        f"{R}/logs/fingerprints.log",
    benchmark:
        f"{R}/benchmarks/fingerprints.tsv"
    conda:
        "../envs/screenbai.yaml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        radius=config["featurize"]["radius"],
        n_bits=config["featurize"]["n_bits"],
    script:
        "../scripts/fingerprints.py"


rule pca:
    input:
        library=f"{R}/library.parquet",
        store=f"{R}/features/fingerprints",
    output:
        features=f"{R}/features/pca_d{{d}}.parquet",
        info=f"{R}/features/pca_d{{d}}.json",
    log:
        f"{R}/logs/pca_d{{d}}.log",
    benchmark:
        f"{R}/benchmarks/pca_d{{d}}.tsv"
    conda:
        "../envs/screenbai.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        random_state=config["featurize"]["pca_random_state"],
    script:
        "../scripts/pca.py"


rule ground_truth:
    input:
        library=f"{R}/library.parquet",
        label=f"{R}/curation/label.json",
        features=f"{R}/features/pca_d{{d}}.parquet",
    output:
        arms=f"{R}/ground_truth/arms_d{{d}}.parquet",
        fit=f"{R}/ground_truth/fit_d{{d}}.json",
    log:
        f"{R}/logs/ground_truth_d{{d}}.log",
    conda:
        "../envs/screenbai.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        C=config["ground_truth"]["C"],
        random_state=config["ground_truth"]["random_state"],
    script:
        "../scripts/ground_truth.py"
