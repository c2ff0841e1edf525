"""The HTML balance report: one self-contained file (inline SVG charts, no scripts)."""
