# screenbai: ChEMBL target -> curated library -> fingerprints/PCA -> ground truth ->
# best-arm screens -> report.  `snakemake --cores 8` runs the CDK2 study of config/config.yaml;
# `snakemake --cores 8 --configfile config/egfr.yaml` screens EGFR (a --configfile replaces the
# default config entirely). See docs/workflow.md.

import sys

from snakemake.utils import min_version, validate

min_version("8.0")

# The workflow imports the screenbai package of this repository, whatever --directory is (the
# rules' scripts do the same through workflow/scripts/rule_setup.py).
sys.path.insert(0, workflow.basedir)


# The default config is read only when no --configfile is given, so a target's config never
# inherits keys (e.g. a different source kind) from the CDK2 study.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# jsonschema's messages do not always name the key and the fix (a typo inside offline_fallback read
# "... is not valid under any of the given schemas"): say what is wrong first; validate sets the defaults
from screenbai.screening.schema import config_errors

_errors = config_errors(config, f"{workflow.basedir}/workflow/schemas/config.schema.yaml")
if _errors:
    raise ValueError("the config does not fit workflow/schemas/config.schema.yaml:\n  " + "\n  ".join(_errors))
validate(config, "workflow/schemas/config.schema.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/acquire.smk"
include: "workflow/rules/chem.smk"
include: "workflow/rules/screen.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
