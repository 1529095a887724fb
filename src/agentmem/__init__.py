"""agentmem."""
