"""`study export DIR`: the study's tidy tables (`app.studies.data`) as CSV and Parquet,
and the codebook that names every column.

A statistician loads a table in one line: `pandas.read_parquet("DIR/trials.parquet")`,
`pandas.read_csv("DIR/trials.csv")`, or R's `arrow::read_parquet` / `read.csv`. Every
file is written whole or not at all (a temporary file renamed), so an export that
fails leaves no half-written table.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from app.core.files import write_atomic
from app.store import Store
from app.studies.data import COLUMNS, Row, codebook, study_data
from app.studies.model import Study


def _csv(rows: list[Row], columns: list[str]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: "" if row.get(key) is None else row[key] for key in columns})
    return out.getvalue().encode("utf-8")


def _parquet(rows: list[Row], columns: list[str]) -> bytes:
    # pyarrow is imported where it writes: the rest of DeskLoop never needs it.
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = [{key: row.get(key) for key in columns} for row in rows]
    # An empty table still has its columns (from_pylist would make none).
    table = pa.Table.from_pylist(values) if values else pa.table({key: [] for key in columns})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def export_study(
    store: Store, study: Study, folder: Path, study_id: str | None = None
) -> list[Path]:
    """Write every table and the codebook into `folder`; return the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    data = study_data(store, study, study_id)
    written: list[Path] = []
    for table, rows in data.tables().items():
        columns = list(COLUMNS[table])
        for suffix, encode in ((".csv", _csv), (".parquet", _parquet)):
            path = folder / f"{table}{suffix}"
            write_atomic(path, encode(rows, columns))
            written.append(path)
    path = folder / "codebook.md"
    write_atomic(path, "\n".join(codebook(study_id or study.id)).encode("utf-8"))
    written.append(path)
    return written
