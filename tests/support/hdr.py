"""HdrHistogram V2 (deflate) decoding, written apart from the engine's Rust code: enough to count
the recorded values and bound them, and to read a ``--hdr-log`` file (one histogram per interval)."""

from __future__ import annotations

import base64
import math
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Hdr:
    """A decoded histogram: {(lowest, highest) equivalent value range: count}."""

    buckets: dict[tuple[int, int], int]

    @property
    def total(self) -> int:
        return sum(self.buckets.values())

    @property
    def max_range(self) -> tuple[int, int]:
        return max(self.buckets)

    @property
    def min_range(self) -> tuple[int, int]:
        return min(self.buckets)


def decode_hdr(text: str) -> Hdr:
    raw = base64.b64decode(text)
    cookie, length = struct.unpack(">ii", raw[:8])
    assert cookie & ~0xF0 == 0x1C849304, f"not a V2 compressed histogram: cookie {cookie:#x}"
    inner = zlib.decompress(raw[8 : 8 + length])
    cookie, payload_len, _offset, digits, lowest, _highest, _ratio = struct.unpack(">iiiiqqd", inner[:40])
    assert cookie & ~0xF0 == 0x1C849303, f"not a V2 histogram: cookie {cookie:#x}"
    payload = inner[40 : 40 + payload_len]
    sub_bucket_count = 1 << math.ceil(math.log2(2 * 10**digits))
    half_magnitude = sub_bucket_count.bit_length() - 2
    half_count = sub_bucket_count // 2
    unit_magnitude = lowest.bit_length() - 1

    def value_range(index: int) -> tuple[int, int]:
        bucket = (index >> half_magnitude) - 1
        sub_bucket = (index & (half_count - 1)) + half_count
        if bucket < 0:
            sub_bucket -= half_count
            bucket = 0
        low = sub_bucket << (bucket + unit_magnitude)
        return low, low + (1 << (bucket + unit_magnitude)) - 1

    buckets: dict[tuple[int, int], int] = {}
    index = position = 0
    while position < len(payload):
        value = shift = 0
        for byte_number in range(9):  # LEB128, the 9th byte carries 8 bits
            byte = payload[position]
            position += 1
            if byte_number == 8:
                value |= byte << 56
                break
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        value = (value >> 1) ^ -(value & 1)  # ZigZag
        if value < 0:
            index += -value  # a run of empty buckets
        else:
            if value:
                buckets[value_range(index)] = value
            index += 1
    return Hdr(buckets)


def hdr_log_intervals(path: Path) -> list[tuple[float, float, float, Hdr]]:
    intervals = []
    for line in path.read_text().splitlines():
        if not line or line.startswith("#") or line.startswith('"StartTimestamp"'):
            continue
        start, length, interval_max, histogram = line.split(",")
        intervals.append((float(start), float(length), float(interval_max), decode_hdr(histogram)))
    return intervals
