"""The campaign file and the policy rebuilt from it: store.py (the SQLite file, its log, checksums
and errors), creation.py (a new file, built atomically), replay.py (the policy rebuilt from the log),
armset.py (the algorithm on the active compounds) and changes.py (compounds added or withdrawn, the
plate format changed)."""
