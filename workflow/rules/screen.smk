# Stage 5: draw K compounds (one fixed subset per K), run every algorithm on every (d, K)
# screen in chunks of replications (one job each: scales out on a cluster), merge the records.


rule subset:
    input:
        library=f"{R}/library.parquet",
    output:
        subset=f"{R}/subsets/K{{K}}.csv",
    log:
        f"{R}/logs/subset_K{{K}}.log",
    conda:
        "../envs/screenbai.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        subset_seed=config["screen"]["subset_seed"],
    script:
        "../scripts/subset.py"


rule screen:
    input:
        arms=f"{R}/ground_truth/arms_d{{d}}.parquet",
        fit=f"{R}/ground_truth/fit_d{{d}}.json",
        subset=f"{R}/subsets/K{{K}}.csv",
    output:
        records=f"{R}/runs/{{label}}/d{{d}}_K{{K}}/chunk{{chunk}}.parquet",
    log:
        f"{R}/logs/screen/{{label}}_d{{d}}_K{{K}}_chunk{{chunk}}.log",
    benchmark:
        f"{R}/benchmarks/screen/{{label}}_d{{d}}_K{{K}}_chunk{{chunk}}.tsv"
    conda:
        "../envs/screenbai.yaml"
    threads: 1
    resources:
        runtime=60,
        mem_mb=2000,
    params:
        entry=algorithm_entry,
        start=chunk_start,
        n_reps=chunk_size,
        seed=config["screen"]["seed"],
        max_samples=config["screen"]["max_samples"],
        modules=MODULES,
        epsilon=config["report"]["epsilon"],
    script:
        "../scripts/screen.py"


rule aggregate:
    input:
        chunks=chunk_runs,
    output:
        records=f"{R}/records.parquet",
    log:
        f"{R}/logs/aggregate.log",
    conda:
        "../envs/screenbai.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/aggregate.py"
