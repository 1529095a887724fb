"""``make install`` leaves a pgvector this CPU runs (``scripts/portable_pgvector.py``).

The wheel's ``vector.so`` needs AVX-512; where the CPU lacks it the script replaces it with
a portable build of the same release. The decision and the refusals are tested without
the network; the installed state is checked as ``make install`` left it.
"""

from __future__ import annotations

import importlib.util
import io
import tarfile

import pytest
from support.paths import REPO

_spec = importlib.util.spec_from_file_location(
    "portable_pgvector", REPO / "scripts" / "portable_pgvector.py"
)
pgv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pgv)

# two processors of an AVX2 machine without AVX-512, as /proc/cpuinfo lists them
_CPUINFO_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu sse4_2 avx f16c avx2 fma bmi2
bogomips\t: 4890.81

processor\t: 1
flags\t\t: fpu sse4_2 avx f16c avx2 fma bmi2
"""


def test_cpu_flags_are_the_first_processors():
    assert pgv.cpu_flags(_CPUINFO_AVX2) == {"fpu", "sse4_2", "avx", "f16c", "avx2", "fma", "bmi2"}
    assert pgv.cpu_flags("processor\t: 0\n") == frozenset()


def test_an_avx2_cpu_lacks_every_flag_the_wheel_needs():
    assert pgv.WHEEL_FLAGS - pgv.cpu_flags(_CPUINFO_AVX2) == {
        "avx512f",
        "avx512dq",
        "avx512bw",
        "avx512vl",
    }


def test_the_shipped_release_has_a_pinned_source():
    release = pgv.control_version(pgv.pginstall())
    assert release in pgv.SOURCES
    assert len(pgv.SOURCES[release]) == 64


def test_the_installed_vector_so_runs_on_this_cpu(capsys):
    """Either the CPU has every flag of the wheel's build, or make install replaced it."""
    lib = pgv.pginstall() / "lib" / "postgresql" / "vector.so"
    sidecar = lib.with_name(pgv.SIDECAR)
    if pgv.missing_flags():
        assert sidecar.read_text().strip() == pgv.sha256(lib)
    assert pgv.main(["--check"]) == 0
    assert "pgvector: " in capsys.readouterr().out


def test_an_unpinned_release_is_refused_before_any_download(tmp_path):
    with pytest.raises(pgv.BuildError, match=r"pgvector 9\.9\.9: pin its Debian source tarball"):
        pgv.fetch("9.9.9", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_tarball_without_a_makefile_is_refused(tmp_path):
    tarball = tmp_path / "x.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        info = tarfile.TarInfo("pgvector-0.0.0/README.md")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(pgv.BuildError, match="no single source directory with a Makefile"):
        pgv.build(tarball, work, tmp_path / "pg_config")
