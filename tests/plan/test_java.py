"""The Java helpers (plan/java/*.java): what javac says of them against PySpark's jars
(each as the installed PySpark's line compiles it), and what a helper that does not
compile does under the tests' strict mode."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pyspark
import pytest

import sparkprov as sp
from sparkprov.plan import references
from sparkprov.plan.versions import installed_line

JAVA = Path(references.__file__).parent / "java"


def test_every_java_helper_compiles_with_javac_against_pysparks_jars(tmp_path):
    javac = shutil.which("javac")
    assert javac, "javac is needed (on Debian: apt-get install openjdk-17-jdk-headless)"
    names = sorted(p.stem for p in JAVA.glob("*.java"))
    assert set(names) >= {"SparkprovTree", "SparkprovRidCollector", "SparkprovElements"}
    line, compiled = installed_line(), tmp_path / "classes"
    sources = []
    for name in names:  # the source Janino is given on this line
        sources.append(tmp_path / f"{name}.java")
        sources[-1].write_text(line.java_source(name))
    jars = str(Path(pyspark.__file__).parent / "jars" / "*")
    done = subprocess.run(
        [javac, "-nowarn", "-d", str(compiled), "-cp", jars, *map(str, sources)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert {p.stem for p in compiled.glob("*.class")} >= set(names)


def test_a_helper_that_does_not_compile_raises_in_strict_mode(spark, monkeypatch):
    monkeypatch.setenv(references.STRICT, "1")
    monkeypatch.setattr(references, "_COMPILED", {})
    with pytest.raises(sp.JvmHelperUnavailable, match="SparkprovBroken"):
        references.compiled(spark, "SparkprovBroken", "public class SparkprovBroken { not java }")
    monkeypatch.delenv(references.STRICT)
    assert references.compiled(spark, "SparkprovBroken2", "public class SparkprovBroken2 { not java }") is None
