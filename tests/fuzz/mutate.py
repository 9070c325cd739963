"""The byte mutator the fuzz targets share: edits drawn by hypothesis over a real file's interesting regions."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["EXTREMES", "mutate"]

# values that break naive readers: zero, all ones, sign bits, just past common limits
EXTREMES = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
            0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF]


def mutate(data: bytes, draw: st.DataObject, regions: list[tuple[int, int]], *, min_edits: int = 0,
           max_edits: int = 8) -> bytes:
    """``data`` with ``min_edits`` to ``max_edits`` edits (a bit flipped, a byte or an extreme word written,
    the file cut short or extended), each inside one of ``regions`` or anywhere."""
    out = bytearray(data)
    for _ in range(draw.draw(st.integers(min_edits, max_edits), label="mutations")):
        if not out:
            break
        kind = draw.draw(st.sampled_from(["flip", "byte", "word", "truncate", "extend"]), label="kind")
        start, end = draw.draw(st.sampled_from([*regions, (0, len(out))]), label="region")
        end = max(start + 1, min(end, len(out)))
        if start >= len(out):
            continue
        at = draw.draw(st.integers(start, end - 1), label="offset")
        if kind == "flip":
            out[at] ^= 1 << draw.draw(st.integers(0, 7), label="bit")
        elif kind == "byte":
            out[at] = draw.draw(st.integers(0, 255), label="value")
        elif kind == "word":
            size = draw.draw(st.sampled_from([2, 4, 8]), label="size")
            value = draw.draw(st.sampled_from(EXTREMES) | st.integers(0, 2 ** (8 * size) - 1), label="word")
            value &= 2 ** (8 * size) - 1
            out[at : at + size] = value.to_bytes(size, draw.draw(st.sampled_from(["little", "big"]), label="end"))
        elif kind == "truncate":
            del out[at:]
        else:
            out += draw.draw(st.binary(max_size=256), label="tail")
    return bytes(out)
