"""Type stub of the Rust engine (``crates/py``); see docs/engine-contract.md."""

from typing import Any, Literal, TypedDict

class ProgressInfo(TypedDict):
    phase: Literal["warmup", "measure", "drain", "done"]
    elapsed_s: float
    complete: int
    failed: int
    rate: float

class Run:
    def progress(self) -> ProgressInfo: ...
    def wait(self, timeout_s: float) -> bool: ...
    def cancel(self) -> None: ...
    def result(self) -> str: ...

def start(spec: dict[str, Any]) -> Run: ...
