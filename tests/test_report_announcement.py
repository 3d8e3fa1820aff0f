"""``archsim sweep --report`` and ``archsim report`` announce their page as every other command announces a file it
wrote: ``wrote PATH`` (:func:`archsim.output_files.note_written`).

Failed before the fix: both said ``report: PATH``, the one command family with its own wording."""

from output_commands import SWEEP_SPEC

from archsim.cli import main


def test_sweep_and_report_say_wrote_the_page(tmp_path, capsys):
    spec, results, page = tmp_path / "spec.toml", tmp_path / "results", tmp_path / "page.html"
    spec.write_text(SWEEP_SPEC, encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(results), "--quiet", "--report", str(page)]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == f"wrote {page}"
    again = tmp_path / "again.html"
    assert main(["report", str(results), "--out", str(again)]) == 0
    assert capsys.readouterr().err.splitlines() == [f"wrote {again}"]
    assert again.is_file() and page.is_file()
