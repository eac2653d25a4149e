"""The demo application bundled for ``pounder tune --demo`` (see :mod:`pounder.demo.app`)."""

__all__: list[str] = []
