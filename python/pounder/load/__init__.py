"""Load generation for ``pounder bench``: option parsing and validation (``_parse``, ``_spec``),
running the engine (``_bench``), results (``_result``) and their text and CSV forms (``_report``,
``_csv``). The public names are re-exported by :mod:`pounder`."""
