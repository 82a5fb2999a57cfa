"""The one error type of the data stage."""

from __future__ import annotations

from typing import Any


class DataError(ValueError):
    """Bad input data. The message names the file, the row and the field.

    One convention everywhere: rows are counted from 1 as an editor shows them. Callers pass the
    row's 0-based ``index``; ``row`` and the message say ``index + 1``. In a JSONL file row N is
    line N (blank lines count); in a CSV file, the N-th record after the header; in JSON lists
    and parquet files, the N-th row.
    """

    def __init__(self, file: Any, message: str, index: int | None = None, field: str | None = None):
        self.file = str(file)
        self.row = None if index is None else index + 1
        self.field = field
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")
