"""Tables, the capture document and the HTML report, all built from result files (never engines)."""
