"""Rule curate: raw activities -> compound library, curation report (every dropped row), cure label.

Refused here, before any fingerprint is computed: a declared activity type the data do not
hold, a cure label that leaves a single class, a PCA dimension d above the library's size, and a
screen larger than the library unless screen.clip_K (the default) clips it to the library's size,
with a warning on the console, in the log and in the report; and an algorithm whose parameters do not fit
that clipped K (m >= K).
"""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json
import sys

import pandas as pd

from screenbai.chem.curate import curate_activities
from screenbai.chem.ground_truth import cure_threshold
from screenbai.screening import (
    check_activity_types,
    check_algorithms,
    check_dimensions,
    check_library_size,
    clip_studies,
    overparameterised_note,
    prepare_activities,
    study_points,
)

with open(snakemake.input.provenance) as fh:
    provenance = json.load(fh)
settings = provenance.get("settings", {})
where = settings.get("path") or f"ChEMBL target {settings.get('target_chembl_id')}"
types = list(snakemake.params.activity_types)
activity = "/".join(types)

raw = pd.read_parquet(snakemake.input.raw)
rows_per_type = check_activity_types(raw, types, where)
library, report = curate_activities(prepare_activities(raw, types, where), activity_types=types,
                                    **snakemake.params.curation)
if len(library) == 0:
    raise ValueError(f"curation of {where} kept 0 of {len(raw)} rows; dropped: {report.dropped}")
# a d above the library's size would fail in the pca rule, after the fingerprints, naming no key
check_dimensions(snakemake.params.dims, snakemake.params.n_bits, len(library), f"the curated library of {where}")
clipped = check_library_size(len(library), snakemake.params.sizes, f"the curated library of {where}",
                             clip=snakemake.params.clip_K)
if clipped:  # on the console too, not only in this rule's log
    print(f"WARNING: {clipped['message']}", file=sys.stderr)
    # the algorithms were checked for the K asked; a K clipped to the library's size (m-best of fewer than m + 1
    # compounds) would fail in every screen job, after the fingerprints and the ground truth
    try:
        check_algorithms(snakemake.params.algorithms, snakemake.params.algorithm_modules, [clipped["ran"]],
                         snakemake.params.max_samples)
    except ValueError as exc:
        raise ValueError(
            f"{exc} (K = {clipped['ran']} is the size of the curated library of {where}, to which screen.clip_K "
            f"clipped K = {', '.join(map(str, clipped['asked']))}): lower the algorithm's parameter (e.g. m) or "
            "screen a larger library"
        ) from None
    # the console warned before any job about the screens asked with K <= d + 1; a clipped K makes new ones
    asked = set(study_points(snakemake.params.studies))
    note = overparameterised_note(sorted(set(study_points(clip_studies(snakemake.params.studies, clipped["ran"])))
                                         - asked))
    if note:
        logger.warning("%s (K clipped to the library's size)", note)
        print(f"WARNING: {note} (K clipped to the library's size)", file=sys.stderr)
label = cure_threshold(library["activity_nM"], activity_label=snakemake.params.activity_label, **snakemake.params.label)
label.update(activity_type=activity, activity_types=types, rows_per_type=rows_per_type,
             activity_label=snakemake.params.activity_label, pchembl_of=snakemake.params.pchembl_of, K_clipped=clipped)
logger.info("cure label: %s: %d of %d compounds cure", label["description"], label["n_cured"], label["n_compounds"])

library.to_parquet(snakemake.output.library, index=False)
content = json.loads(report.to_json())
content["source"] = provenance
with open(snakemake.output.report_json, "w") as fh:
    json.dump(content, fh, indent=2, default=str)
with open(snakemake.output.label, "w") as fh:
    json.dump(label, fh, indent=2)
report.to_frame().to_csv(snakemake.output.counts, index=False)
