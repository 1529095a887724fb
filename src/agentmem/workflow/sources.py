"""Library files listed as job inputs, so that editing one reruns the jobs that use it."""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
from pathlib import Path

#: the shared modules an arm package may import whose edits rerun that arm's jobs
SHARED_PREFIX = "agentmem.sql."


def _shared_imports(path: Path) -> list[str]:
    """Files of the :data:`SHARED_PREFIX` modules that the module at ``path`` imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(SHARED_PREFIX):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith(SHARED_PREFIX))
    out = []
    for name in sorted(names):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            out.append(str(Path(spec.origin).resolve()))
    return out


@functools.cache
def arm_files(cls: type) -> tuple[str, ...]:
    """Source files of arm class ``cls`` wherever it is installed (a plug-in's is outside src/).

    Its module; when that module is part of a package other than ``agentmem/arms`` itself
    (a family package such as ``agentmem/arms/sqlite/``, or a plug-in's), every module of
    that package, sorted; then the modules of the shared SQL layer (``agentmem.sql``) those
    files import, sorted. Cached per class.
    """
    import agentmem.arms

    source = Path(inspect.getsourcefile(cls) or inspect.getfile(cls)).resolve()
    folder = source.parent
    in_package = (folder / "__init__.py").is_file()
    if not in_package or folder == Path(agentmem.arms.__file__).resolve().parent:
        own = [source]
    else:
        own = sorted(folder.glob("*.py"))
    shared = sorted({f for p in own for f in _shared_imports(p)})
    return tuple([*(str(p) for p in own), *shared])


class Sources:
    """Paths of library files under ``basedir/src`` and of arms' sources.

    Args:
        basedir: the repository root (the Snakefile's directory).
    """

    def __init__(self, basedir: str | Path) -> None:
        self.basedir = Path(basedir)

    def library_file(self, relpath: str) -> str:
        """Absolute path of a file under ``src/``."""
        return str(self.basedir / "src" / relpath)

    def library_package(self, relpath: str, pattern: str = "*.py") -> list[str]:
        """Absolute paths of a package's files under ``src/``, sorted."""
        return sorted(str(f) for f in (self.basedir / "src" / relpath).glob(pattern))

    def captions(self) -> list[str]:
        """Absolute paths of the report's caption files (``workflow/report/*.rst``), sorted.

        Snakemake's report and the HTML report read the same ones.
        """
        return sorted(str(f) for f in (self.basedir / "workflow" / "report").glob("*.rst"))

    @staticmethod
    def arms(arms: list[str]) -> list[str]:
        """Source files of the arms ``arms`` (:func:`arm_files`), each once, in order."""
        from agentmem.arms import ARMS

        return list(dict.fromkeys(f for a in arms for f in arm_files(ARMS[a])))
