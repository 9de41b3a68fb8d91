"""Issue 25 item 19: `.ci/run` runs the tests against the real acc with the build beside the
checkout (../shared/acc/acc) when it is there, and changes nothing when it is not (those
tests then skip, named in the summary) or when $ACC is already set."""
import os
import shutil
import subprocess

from conftest import ROOT


def _ci_run(tmp_path, acc_env=None) -> list[str]:
    """Run a copy of .ci/run in tmp/repo with a `make` that records what it was given."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True, exist_ok=True)
    shutil.copy(os.path.join(ROOT, ".ci", "run"), repo / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "make.log"
    log.write_text("")
    make = bin_dir / "make"
    make.write_text(f'#!/bin/sh\necho "$1 ACC=${{ACC:-unset}}" >> {log}\n')
    make.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "ACC"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    if acc_env is not None:
        env["ACC"] = acc_env
    subprocess.run(["bash", str(repo / ".ci" / "run")], env=env, check=True,
                   capture_output=True, text=True)
    return log.read_text().splitlines()


def test_ci_run_uses_the_acc_beside_the_checkout(tmp_path):
    assert _ci_run(tmp_path) == ["demo ACC=unset", "test ACC=unset"]
    acc = tmp_path / "shared" / "acc" / "acc"
    acc.parent.mkdir(parents=True)
    acc.write_text("#!/bin/sh\n")
    acc.chmod(0o755)
    assert _ci_run(tmp_path) == [f"demo ACC={acc}", f"test ACC={acc}"]
    assert _ci_run(tmp_path, "/opt/acc") == ["demo ACC=/opt/acc", "test ACC=/opt/acc"]


def test_skipped_tests_are_named_in_the_summary(tmp_path):
    (tmp_path / "conftest.py").write_text(open(os.path.join(ROOT, "tests", "conftest.py")).read())
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.mark.skipif(True, reason='NOT RUN: no acc here')\n"
        "def test_a():\n    pass\n")
    import sys

    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path)], capture_output=True, text=True, cwd=tmp_path)
    assert "SKIPPED 1 test(s): NOT RUN: no acc here" in p.stdout, p.stdout
