"""Load generation for ``pounder bench``: option parsing and validation (``_parse``, ``_spec``),
running the engine (``_bench``), results (``_result``) and their text and CSV forms (``_report``,
``_csv``). The public names are re-exported by :mod:`pounder`."""

from pounder.load._bench import Progress, ProgressCallback, run_bench
from pounder.load._result import SCHEMA, BenchResult, MalformedResultError
from pounder.load._spec import BenchSpec

__all__ = ["SCHEMA", "BenchResult", "BenchSpec", "MalformedResultError", "Progress", "ProgressCallback", "run_bench"]
