"""What every rule's script does first: import this repository's screenbai, log to the rule log.

The rule scripts' folder is on ``sys.path`` (Snakemake adds it), so each script starts with
``from rule_setup import start; start(snakemake)``.  The software environment
(workflow/envs/screenbai.yaml) holds only screenbai's dependencies: the package itself is
imported from the repository that holds this workflow, so ``--sdm conda`` works from any
directory.  A failing rule writes its error message at the top of the last lines of its own
log (the file Snakemake names), not only in a long traceback on the console.
"""

import logging
import sys
import traceback
from pathlib import Path

REPO_ROOT = str(Path(__file__).resolve().parents[2])


def start(snakemake) -> logging.Logger:
    """Put the repository first on ``sys.path``, log to the rule's log, log any uncaught error."""
    if REPO_ROOT not in sys.path[:1]:
        sys.path.insert(0, REPO_ROOT)
    log_file = snakemake.log[0] if len(snakemake.log) else None
    logging.basicConfig(
        filename=log_file,
        level=logging.INFO,
        force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.captureWarnings(True)
    logger = logging.getLogger(f"rule.{snakemake.rule}")

    def log_uncaught(exc_type, exc, tb):
        message = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        # the log keeps the whole chain: the errors this one was raised from (a ChEMBL download's network errors)
        logger.error(
            "rule %s failed: %s\n%s",
            snakemake.rule,
            message,
            "".join(traceback.format_exception(exc_type, exc, tb)),
        )
        logging.shutdown()
        # the console the error's own traceback only: offline, a refused fallback came after 6 tracebacks of the
        # failed download (150 lines); then the message once more, short, as the last thing on the console
        traceback.print_exception(exc_type, exc, tb, chain=False, file=sys.stderr)
        where = f" (the whole traceback, with the errors it came from: {log_file})" if log_file else ""
        print(f"\nrule {snakemake.rule} failed: {message}{where}", file=sys.stderr)

    sys.excepthook = log_uncaught
    return logger
