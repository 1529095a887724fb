"""The workflow's Python: target lists, input choices and preflight checks.

``workflow/rules/*.smk`` wire these functions into rules; they take the validated
:class:`agentmem.config.Config` and return plain values, so they are tested without
Snakemake (``tests/test_workflow_targets.py``).
"""
