"""The error a bench measurement raises when it cannot be taken."""


class BenchError(RuntimeError):
    """A measurement could not be taken (the message says why)."""
