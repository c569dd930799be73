"""kbx eval's tuning options for the pipeline (issue 14): documented in --help, and a value
outside their range is refused before anything runs, naming the option."""
import pytest


@pytest.mark.parametrize("option,bad", [("--live-tasks", "0"), ("--reference-workers", "17")])
def test_a_pipeline_option_out_of_range_is_refused(kbx, tmp_path, option, bad):
    (tmp_path / "cands" / "Math").mkdir(parents=True)
    (tmp_path / "cands" / "Math" / "add.py").write_text("def add(a, b):\n    return a + b\n")
    db = tmp_path / "k.db"
    proc = kbx("eval", option, bad, "--candidates", str(tmp_path / "cands"), "--device", "cpu",
               "--db", str(db))
    assert proc.returncode != 0
    assert option in proc.stderr and "not in range" in proc.stderr, proc.stderr
    assert not db.exists()


def test_the_pipeline_options_are_in_the_help(kbx):
    out = kbx("eval", "--help", check=True).stdout
    for option in ("--jobs", "--reference-workers", "--live-tasks"):
        assert option in out
