"""Where a ``wgmma_ws`` call's cycles go, from the kernel itself: built with ``-DWS_TRACE``, the
first consumer warpgroup of each block notes clock64 before and after each tile's first k-slice
wait, after its drain and after its store (matmul_wgmma_ws.cu, ``WS_MARK``). Printed per shape:

- ``mma``: cycles from a tile's first k-slice to its drain, against the tensor cores' 1024 cycles
  a slice of a 128 x 256 block (16-bit, dense: 4096 FLOP a cycle an SM);
- between tiles: ``pack`` (drain to the tile's end: packing, stream-K's hand-over), ``walk`` (to
  the next tile's start: zeroing the sums) and the next tile's wait for its first k-slice;
- ``start`` / ``tail``: kernel start to the first slice, and the last drain to the end of its epilogue;
  that epilogue in parts: taking the others' sums (a tile's finisher), handing its own over (the
  other runs' blocks), and from there to the block's last TMA store done;
- the clock over the call (cycles against %globaltimer);
- per k-slice of a block's first three tiles (``ws_copy``): the producer's issue of its copy to the
  consumer having it, and the consumer's wait for it.

Usage (Hopper GPU): python lab/trace_wgmma.py [--dtype bfloat16] [--plans model,256:0,256:70] [M N K [wt|row]] ...
"""

from __future__ import annotations

import argparse
import statistics

import torch

from cuda_ref import _matmul as mm
from cuda_ref import compile as cuda_compile
from cuda_ref import loader
from lab.sweep_ws_stream_k import forced

SHAPES = ((4096, 4096, 4096, "wt"), (4096, 4096, 4096, "row"), (8192, 8192, 8192, "wt"),
          (2048, 11008, 4096, "wt"), (8192, 4096, 11008, "wt"))
SLOTS, TILES_KEPT, PER_TILE = 36, 6, 5
COPY_AT = (0, 1, 2, 3, 4, 8, 16, 32, 60, 61, 62, 63)  # the k-slices ws_copy notes (matmul_wgmma_ws.cu)


def trace_globals():
    """The ws_trace arrays of every wgmma_ws instance compiled in this process."""
    import cupy
    return [cupy.ndarray((1024, SLOTS), dtype=cupy.uint64, memptr=m[0].get_global("ws_trace"))
            for k, m in loader._modules.items() if isinstance(k, tuple) and "matmul_wgmma_ws" in k[1]]


def summary(rows: "list[list[int]]", k_tiles: int) -> dict:
    """Medians over blocks and their first tiles, in cycles."""
    parts = {k: [] for k in ("mma", "waited", "pack", "walk", "first_wait", "start", "tail", "hand_over", "put",
                             "last_pack", "stores")}
    tiles = []
    for r in rows:
        n = int(r[33])
        if n == 0:
            continue
        tiles.append(n)
        marks = [r[1 + PER_TILE * i: 1 + PER_TILE * (i + 1)] for i in range(min(n, TILES_KEPT))]
        for i, (begin, first, drained, end, waited) in enumerate(marks):
            parts["mma"].append(drained - first)
            parts["waited"].append(waited)
            if i:
                parts["pack"].append(marks[i - 1][3] - marks[i - 1][2])
                parts["walk"].append(begin - marks[i - 1][3])
                parts["first_wait"].append(first - begin)
        parts["start"].append(marks[0][1] - marks[0][0])
        parts["tail"].append(marks[-1][3] - marks[-1][2])
        if n <= TILES_KEPT:  # the last tile's epilogue in parts (slot 0: its hand-over done; 32: the stores done)
            if r[0]:
                parts["hand_over"].append(r[0] - marks[-1][2])
                parts["last_pack"].append(marks[-1][3] - r[0])
            else:
                parts["put"].append(marks[-1][3] - marks[-1][2])
            parts["stores"].append(r[32] - marks[-1][3])
    out = {k: statistics.median(v) if v else float("nan") for k, v in parts.items()}
    out.update(blocks=len(tiles), tiles=(min(tiles), max(tiles)), ideal=1024 * k_tiles,
               mma_min=min(parts["mma"]), mma_max=max(parts["mma"]))
    return out


def copies(k_tiles: int) -> None:
    """Per noted k-slice of a block's first three tiles: the copy's issue to the consumer having it,
    and the consumer's wait, in cycles (medians over blocks)."""
    import cupy
    rows = [cupy.ndarray((1024, 3, len(COPY_AT), 3), dtype=cupy.uint64, memptr=m[0].get_global("ws_copy")).get()
            for k, m in loader._modules.items() if isinstance(k, tuple) and "matmul_wgmma_ws" in k[1]]
    g = max(rows, key=lambda x: int((x[..., 0] > 0).sum()))
    for i in range(3):
        cells = []
        for j, k in enumerate(COPY_AT):
            if k >= k_tiles:
                continue
            v = g[:, i, j, :].astype("int64")
            ok = (v[:, 0] > 0) & (v[:, 1] > v[:, 0])
            if ok.sum() == 0:
                continue
            lat = statistics.median((v[ok, 1] - v[ok, 0]).tolist())
            wait = statistics.median((v[ok, 1] - v[ok, 2]).tolist())
            cells.append(f"{k}: {lat:.0f}/{wait:.0f}")
        print(f"  tile {i}, k-slice: issued->had / waited  " + "  ".join(cells))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--plans", default="model",
                   help="each shape's plans, comma-separated: 'model', or COLUMNS:SK (tile width, stream-K units; K whole)")
    p.add_argument("shape", nargs="*", help="M N K [wt|row], repeated")
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    shapes = SHAPES
    if args.shape:
        it = iter(args.shape)
        shapes = tuple((int(m), int(next(it)), int(next(it)), next(it)) for m in it)
    cuda_compile.OPTIONS = cuda_compile.OPTIONS + ("-DWS_TRACE",)
    cases = [(shape, plan) for shape in shapes for plan in args.plans.split(",")]
    for (M, N, K, layout), plan in cases:
        forced(None if plan == "model" else tuple(map(int, plan.split(":"))))
        a = torch.randn(M, K, device="cuda").to(dtype)
        b = torch.randn(K, N, device="cuda").to(dtype) if layout == "row" else \
            torch.randn(N, K, device="cuda").to(dtype).t()
        print(f"-- {M}x{N}x{K} {layout}: {mm.describe(a, b, 'wgmma_ws')}")
        for _ in range(20):
            mm.matmul(a, b, variant="wgmma_ws")
        torch.cuda.synchronize()
        for g in trace_globals():
            g.fill(0)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        mm.matmul(a, b, variant="wgmma_ws")
        end.record()
        torch.cuda.synchronize()
        rows = max((g.get().tolist() for g in trace_globals()), key=lambda rs: sum(r[33] for r in rs))
        k_tiles = -(-K // 64)
        s = summary(rows, k_tiles)
        busy = [r for r in rows if r[33]]
        ns = max(r[35] for r in busy) - min(r[34] for r in busy)
        kept = [r for r in busy if r[33] <= TILES_KEPT]  # (the clock: blocks whose every tile was noted)
        clock = statistics.median((r[1 + PER_TILE * (int(r[33]) - 1) + 3] - r[1]) / (r[35] - r[34]) for r in kept) \
            if kept else float("nan")
        print(f"{M}x{N}x{K} {layout} {args.dtype}: event {start.elapsed_time(end) * 1e3:.1f} us, "
              f"globaltimer span {ns / 1e3:.1f} us, clock {clock:.3f} GHz (median block)")
        print(f"  blocks {s['blocks']}, tiles a block {s['tiles']}; a tile's mma cycles {s['mma']:.0f} "
              f"(min {s['mma_min']}, max {s['mma_max']}; waiting for k-slices {s['waited']:.0f}) against "
              f"{s['ideal']} = {s['ideal'] / s['mma']:.3f} of peak")
        print(f"  between tiles: pack {s['pack']:.0f}, walk {s['walk']:.0f}, first slice's wait "
              f"{s['first_wait']:.0f}; start {s['start']:.0f}, tail {s['tail']:.0f} cycles (medians)")
        print(f"  the last tile's epilogue: taking the hand-over {s['hand_over']:.0f} then the bias and packing "
              f"{s['last_pack']:.0f} (blocks that finish a tile), handing its sums over {s['put']:.0f} (blocks that "
              f"pass them on), from then to the block's stores done {s['stores']:.0f} cycles (medians)")
        copies(k_tiles)


if __name__ == "__main__":
    main()
