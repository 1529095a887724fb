"""Exception types shared across packages (kept import-free to avoid import cycles)."""


class ArmError(RuntimeError):
    """An arm could not build, open or query its store (message names the store path)."""
