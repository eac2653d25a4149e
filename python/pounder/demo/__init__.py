"""The demo application bundled for ``pounder tune --demo`` (see :mod:`pounder.demo.app`)."""
