"""The numbers behind the current view as JSON, built only on a click (:func:`json_button`), outside the script run:
closures hold plain data and the cached trace, never session state."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any, Callable

import numpy as np
import pandas as pd
import streamlit as st

from app.links import current_link
from app.ui.heatmap import colorscale
from app.ui.map_data import MapData, MapView, region

FORMAT = "attention-playground/view@1"
#: exact weights go into a JSON file for regions up to this many tokens a side (512² numbers ≈ 3 MB)
JSON_MAX_SIDE = 512


def _number(x: float) -> float | None | str:
    """A JSON-safe number: NaN (blocked cell) → None, ±∞ (a mask entry) → "-inf" / "inf"."""
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return x


def matrix(values: np.ndarray) -> list:
    """A numpy array as nested lists of JSON-safe numbers."""
    arr = np.asarray(values, dtype=np.float64)
    if np.isfinite(arr).all():
        return arr.tolist()
    return [matrix(row) for row in arr] if arr.ndim > 1 else [_number(v) for v in arr]


def head_record(
    *,
    page: str,
    model_id: str,
    att,
    layer: int,
    head: int,
    block: str,
    region,
    settings: dict[str, Any],
    link: str,
    shown: MapData | None = None,
) -> dict[str, Any]:
    """One head of a trace in ``region`` ``((q0, q1), (k0, k1))`` as a JSON-ready record: ``pattern`` the exact
    weights (None with a note past :data:`JSON_MAX_SIDE`), ``shown`` the map as drawn where it differs."""
    (q0, q1), (k0, k1) = region
    q_strings, k_strings = list(att.tokens.strings), list(att.key_tokens.strings)
    record: dict[str, Any] = {
        **_head_fields(page, model_id, layer, head, block),
        "tokens": {"query": q_strings[q0:q1], "key": k_strings[k0:k1]},
        "positions": {"query": [q0, q1], "key": [k0, k1]},
        "settings": settings,
        "link": link,
    }
    if max(q1 - q0, k1 - k0) <= JSON_MAX_SIDE:
        record["pattern"] = matrix(att.pattern_rows(layer, head, q0, q1)[:, k0:k1])
    else:
        record["pattern"] = None
        record["note"] = (
            f"{q1 - q0} × {k1 - k0} tokens: zoom to at most {JSON_MAX_SIDE} a side for exact weights "
            "(the CSV takes up to 1,024); 'shown' holds the map as drawn."
        )
    differs = shown is not None and (shown.pooled or shown.value_name != "weight" or shown.k_pos.size != k1 - k0)
    if differs:
        record["shown"] = {
            "value_name": shown.value_name,
            "pooled": bool(shown.pooled),
            "reduce": shown.reduce,
            "query_labels": list(shown.q_labels),
            "key_labels": list(shown.k_labels),
            "query_edges": np.asarray(shown.q_edges).tolist(),
            "key_positions": np.asarray(shown.k_pos).tolist(),
            "values": matrix(shown.values),
        }
    return record


def _head_fields(page: str, model_id: str, layer: int, head: int, block: str) -> dict[str, Any]:
    return dict(format=FORMAT, page=page, model_id=model_id, layer=int(layer), head=int(head), block=block)


def steps_record(
    *, model_id: str, att, layer: int, head: int, block: str, query: int, steps, settings: dict[str, Any], link: str
) -> dict[str, Any]:
    """One query token's steps (Step by step) as a JSON-ready record: the scores at every stage and the weights."""
    return {
        **_head_fields("step_by_step", model_id, layer, head, block),
        "query": int(query),
        "tokens": {"query": list(att.tokens.strings), "key": list(att.key_tokens.strings)},
        "scale": float(steps.scale),
        "scores": dict(raw=matrix(steps.raw[0]), scaled=matrix(steps.scaled[0]), softmax_input=matrix(steps.masked[0])),
        "pattern": [matrix(steps.weights[0])],
        "output": matrix(np.asarray(steps.z).reshape(-1)),
        "settings": settings,
        "link": link,
    }


def to_json(record: dict[str, Any]) -> bytes:
    """The record as UTF-8 JSON (strict: no NaN, tokens as written)."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def head_json_button(
    model_id: str, att, view: MapView, block: str, data: MapData, settings: dict[str, Any], load, page: str
) -> None:
    """Explore's and Heads' button: the head in ``view`` as JSON (:func:`head_record`), built on click from
    ``load()`` (the button holds no trace); ``data``: the map as drawn."""
    layer, head, link = view.layer, view.head, current_link(page)
    shown = region(att, view.q_range, view.k_range)
    look = dict(colour_scale=view.scale, colorscale=colorscale(), weighting=view.weighting)
    settings = {**settings, **look, "hide_sink_columns": bool(view.hide_sinks)}

    def record() -> dict[str, Any]:  # on click: the trace loaded then
        where = dict(page=page, model_id=model_id, layer=layer, head=head, block=block, region=shown, link=link)
        return head_record(**where, att=load(), settings=settings, shown=data)

    json_button("Download the numbers as JSON", record, f"{page}_L{layer}_H{head}.json", key=f"{page}_json")


def download(
    label: str, data: Callable[[], bytes], file_name: str, mime: str, key: str | None = None, icon: str = "download"
) -> None:
    """A download button whose file ``data()`` writes on click, outside the script run (it must close over plain
    data only)."""
    st.download_button(label, data, file_name, mime, key, icon=f":material/{icon}:", on_click="ignore")


def json_button(label: str, build: Callable[[], dict[str, Any]], file_name: str, key: str) -> None:
    """A download button whose JSON record ``build()`` makes on click."""
    download(label, lambda: to_json(build()), file_name, "application/json", key, "data_object")


def grid_table(grid: np.ndarray) -> pd.DataFrame:
    """A map ``[rows, cols]`` as a table whose rows and columns are named ("row 0", "col 0")."""
    rows, cols = np.shape(grid)
    return pd.DataFrame(grid, index=[f"row {r}" for r in range(rows)], columns=[f"col {c}" for c in range(cols)])


def csv_button(label: str, frame, file_name: str, key: str | None = None, **to_csv: Any) -> None:
    """A download button whose CSV is written from the table ``frame`` on click."""
    download(label, lambda: frame.to_csv(**to_csv).encode("utf-8"), file_name, "text/csv", key)


#: what a spreadsheet may read as the start of a formula (OWASP's CSV injection list)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: object) -> str:
    """``value`` as text a spreadsheet keeps as text: one starting like a formula gets a ``'`` in front (OWASP)."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def spreadsheet_csv(header: list[str], rows) -> bytes:
    """A CSV file (UTF-8 with a byte-order mark, which spreadsheets need to read it as UTF-8) of ``header`` and
    ``rows``, every cell through :func:`spreadsheet_cell`."""
    out = io.StringIO()
    writer = csv.writer(out)
    for row in [header, *rows]:
        writer.writerow([spreadsheet_cell(v) for v in row])
    return out.getvalue().encode("utf-8-sig")
