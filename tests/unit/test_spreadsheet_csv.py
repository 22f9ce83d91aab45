"""The class results' CSV (app.ui.export.spreadsheet_csv) read back by Python's csv module: every cell as written,
except that a cell a spreadsheet could take for a formula comes back starting with ' (OWASP's CSV injection advice)."""

from __future__ import annotations

import csv
import io

from app.ui.export import spreadsheet_csv

FORMULAS = ["=1+1", "+SUM(A1:A2)", "-2+3", "@SUM(A1)", "@", "\tTAB", "\r=CR", '=HYPERLINK("http://x","click")', "-"]
PLAIN = ["the keys", "a, b", 'say "hi"', "two\nlines", "über 名前", "", "1=1", " =not first", "'already"]


def read_back(data: bytes) -> list[list[str]]:
    assert data.startswith(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark: spreadsheets then read the file as UTF-8
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def test_formula_like_cells_come_back_as_text_and_every_other_cell_as_written():
    rows = [[f, p] for f, p in zip(FORMULAS, PLAIN)] + [[3, None]]
    header, *body = read_back(spreadsheet_csv(["formula-like", "plain"], rows))
    assert header == ["formula-like", "plain"]
    assert len(body) == len(rows) and len(FORMULAS) == len(PLAIN)
    for (formula, plain), (got_formula, got_plain) in zip(zip(FORMULAS, PLAIN), body):
        assert got_formula == "'" + formula  # the original after the quote, nothing else changed
        assert got_plain == plain
    assert body[-1] == ["3", ""]
    for cell in (c for row in body for c in row):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_a_header_that_looks_like_a_formula_is_text_too():
    (header,) = read_back(spreadsheet_csv(["=cmd|' /C calc'!A0"], []))
    assert header == ["'=cmd|' /C calc'!A0"]
