"""What a campaign tells the people running it: status.py (where it stands), estimates.py (each compound's
descriptive estimates), forecast.py (the cost forecast), explain.py (why these wells), page.py (the HTML page),
export.py (per compound as CSV and Excel, the page as one file)."""
