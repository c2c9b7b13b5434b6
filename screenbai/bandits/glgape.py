"""Placeholder: algorithms of this family are being implemented."""
