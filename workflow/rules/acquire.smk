# Stage 1: acquire raw activities. The only rule that may use the network (ChEMBL), so it is a
# local rule: on a cluster it runs on the submit host, never on a compute node.


localrules:
    acquire,


rule acquire:
    output:
        raw=f"{R}/raw/activities.parquet",
        provenance=f"{R}/raw/provenance.json",
    log:
        f"{R}/logs/acquire.log",
    conda:
        "../envs/screenbai.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        source=config["source"],
        fallback=config.get("offline_fallback"),
        cache_dir=config["cache_dir"],
        repo_root=workflow.basedir,
    script:
        "../scripts/acquire.py"
