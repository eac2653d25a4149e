"""The package version, in its own module so that every module can import it without cycles."""

__version__ = "0.1.0"
