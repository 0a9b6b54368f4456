"""`advisor sweep`: many targets, one isolated `advisor run` process each, and a zoo report.

- `manifest`: the TOML manifest, validated strictly (one-line errors naming line and key).
- `engines`: the per-target subprocess, the index, the local and Ray engines.
- `aggregate`: per-model summaries and zoo-wide root causes from typed `Report`s (no torch).
- `folder`: a sweep folder on disk: its index, the reports it names, its zoo files.
- `rejudge`: `--rejudge`, every target judged again from its measurements.json (no torch).
- `compare`: two zoos before/after, root causes matched by their `BreakIdentity`.
- `render`: Markdown, HTML (figures embedded) and the before/after comparison, as strings.
- `cli`: the subcommand's arguments and what it writes.
"""
