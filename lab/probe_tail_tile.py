"""Does a tail tile pay? Swap-AB matmul tiles of middle row counts (M 65-400) whose token extent is
a power of 2 plus a small tail (BT + TAIL, e.g. 128 + 16 = 144 for M = 143), against the same
kernel with power-of-2 token blocks only (TAIL = 0), the library's default and torch (cuBLAS).

Products c = a @ b, a (M, K), b = W.t() with W (N, K) row-major (nn.Linear's weight, b K-major),
16-bit operands. Today's swap-AB tiles put W's rows in the wgmma's M slot and a's rows (tokens) in
its N slot with a power-of-2 token block: M = 143 takes two blocks of 128, 256 columns of MMA for
143 (44% wasted), and W's tiles are read twice. Here a program owns BW rows of W and BT + TAIL
tokens: two accumulators, acc (BW x BT) and acc_t (BW x TAIL); each k step loads the W tile once
(TMA) and feeds it to two tl.dot calls. K is cut in SPLIT slices (grid axis 1) so that enough
programs fill the SMs; the slices' float32 partials go to a workspace, summed by a second kernel in
slice order (bitwise repeatable). With SPLIT = 1 the kernel writes c directly.

Each shape: torch.mm, triton_impl.matmul and a pruned grid of the prototype's configs (``configs``),
every one checked against torch in float32, all timed flushed and in turns
(``bench.timing.time_interleaved``), so a drifting clock falls on all alike. Prints a line per
shape and a table last (ratios are torch / ours: above 1 is faster than cuBLAS); JSON with --json.

Usage (Hopper GPU):  PYTHONPATH=. python3 lab/probe_tail_tile.py [--shapes M N K ...]
                         [--dtype bfloat16|float16] [--json FILE]
Correctness only, on CPU:  TRITON_INTERPRET=1 PYTHONPATH=. python3 lab/probe_tail_tile.py --check-only
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

SHAPES = [(143, 3584, 3584), (160, 7168, 16384), (170, 7168, 16384), (189, 3584, 3584), (85, 3584, 3584),
          (268, 5120, 17920), (97, 1600, 6400), (235, 3584, 3584), (200, 4096, 14336), (333, 4096, 14336),
          (143, 4096, 4096), (300, 8192, 8192)]
SMS = 132  # H200
BK = 64
SHARED_BUDGET = 200 * 1024  # the stages' bytes; the rest of the 227 KB is left to the epilogue's layout change
ACC_REGS_MAX = 160  # float32 accumulator registers a thread: past this the compiler spills


# M and the k counts vary by shape: not specialized, one compile per config serves every shape
@triton.jit(do_not_specialize=["M", "k_tiles", "k_per_split"])
def _tail_kernel(w_desc, a_desc, t_desc, out_ptr, M, N, k_tiles, k_per_split,
                 BW: tl.constexpr, BT: tl.constexpr, TAIL: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    """out[split] (tokens x W rows) = a's rows [off_t, off_t + BT + TAIL) times W's rows [off_w, off_w
    + BW) over the k-slices of grid axis 1. Program order: the token extents of one W block are
    neighbours, so the second reads W's tiles from L2. TMA zero-fills reads past M, N and K."""
    n_t = tl.cdiv(M, BT + TAIL)
    pid = tl.program_id(0)
    off_w = (pid // n_t) * BW
    off_t = (pid % n_t) * (BT + TAIL)
    split = tl.program_id(1)
    k_lo = split * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, k_tiles)
    acc = tl.zeros((BW, BT), dtype=tl.float32)
    if TAIL > 0:
        acc_t = tl.zeros((BW, TAIL), dtype=tl.float32)
    for kt in tl.range(k_lo, k_hi, num_stages=STAGES):
        off_k = kt * BK
        w = w_desc.load([off_w, off_k])  # once a step, for both dots
        acc = tl.dot(w, a_desc.load([off_t, off_k]).T, acc)
        if TAIL > 0:
            acc_t = tl.dot(w, t_desc.load([off_t + BT, off_k]).T, acc_t)
    # masked pointer stores (int64: SPLIT * M * N may pass 2^31); rounded to out's type (c with SPLIT 1)
    out = out_ptr + split.to(tl.int64) * M * N
    offs_w = off_w + tl.arange(0, BW)
    offs_t = off_t + tl.arange(0, BT)
    tl.store(out + offs_t[:, None].to(tl.int64) * N + offs_w[None, :], acc.T.to(out_ptr.dtype.element_ty),
             mask=(offs_t[:, None] < M) & (offs_w[None, :] < N))
    if TAIL > 0:
        offs_t = off_t + BT + tl.arange(0, TAIL)
        tl.store(out + offs_t[:, None].to(tl.int64) * N + offs_w[None, :], acc_t.T.to(out_ptr.dtype.element_ty),
                 mask=(offs_t[:, None] < M) & (offs_w[None, :] < N))


@triton.jit
def _sum_kernel(ws_ptr, c_ptr, MN, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    """c = ws[0] + ws[1] + ... + ws[SPLIT - 1], in that order (the same bits every run), to c's type."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.load(ws_ptr + offs, mask=mask)
    for s in tl.static_range(1, SPLIT):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def tail_matmul(a, b, BW, BT, TAIL, BK, SPLIT, warps, stages):
    """a @ b by the tail-tile kernel: a (M, K) row-major, b (K, N) K-major (W.t()), 16-bit."""
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    assert a.element_size() == 2, "16-bit operands"
    assert a.stride(1) == 1 and b.stride(0) == 1, "a row-major, b K-major (b = W.t())"
    assert a.stride(0) * 2 % 16 == 0 and b.stride(1) * 2 % 16 == 0, "TMA wants rows of 16-byte multiples"
    (M, K), N = a.shape, b.shape[1]
    w = b.t()  # (N, K), row-major
    k_tiles = triton.cdiv(K, BK)
    k_per_split = triton.cdiv(k_tiles, SPLIT)
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    ws = c if SPLIT == 1 else torch.empty((SPLIT, M, N), dtype=torch.float32, device=a.device)
    a_desc = TensorDescriptor.from_tensor(a, [BT, BK])
    t_desc = TensorDescriptor.from_tensor(a, [TAIL, BK]) if TAIL else a_desc  # (unread with TAIL 0)
    grid = (triton.cdiv(N, BW) * triton.cdiv(M, BT + TAIL), SPLIT)
    _tail_kernel[grid](TensorDescriptor.from_tensor(w, [BW, BK]), a_desc, t_desc, ws, M, N, k_tiles, k_per_split,
                       BW=BW, BT=BT, TAIL=TAIL, BK=BK, STAGES=stages, num_warps=warps)
    if SPLIT > 1:
        _sum_kernel[(triton.cdiv(M * N, 1024),)](ws, c, M * N, SPLIT=SPLIT, BLOCK=1024, num_warps=4)
    return c


def token_extents(M):
    """(BT, TAIL) pairs worth timing at M rows. Baselines (TAIL 0): each BT that covers M in at most
    3 blocks (today's kernel would take 3 x 128 for 268 rows). Tails: for each BT and n = 1 or 2
    extents that BT alone cannot cover, the smallest tail that does (a larger one only adds waste).
    Each kind keeps what pads M to at most 1.5x its best padding."""
    base, tails = {}, {}
    for bt in (64, 128, 256):
        n0 = triton.cdiv(M, bt)
        if n0 <= 3:
            base[bt, 0] = n0 * bt
        for n in (1, 2):
            tail = next((t for t in (16, 32, 64) if n < n0 and n * (bt + t) >= M and bt + t <= 320), None)
            if tail:
                tails[bt, tail] = n * (bt + tail)
    return [p for kind in (base, tails) for p, pad in kind.items() if pad <= 1.5 * min(kind.values())]


def configs(M, N, K):
    """The prototype's configs timed at one shape: token extents x (BW 64, 4 warps; 128, 4 or 8) x the
    splits that first fill the SMs (and one more), each with 4 stages where they fit, else 3."""
    out = []
    for bt, tail in token_extents(M):
        for bw, warps in ((64, 4), (128, 4), (128, 8)):
            if bw * (bt + tail) // (32 * warps) > ACC_REGS_MAX:
                continue
            stages = next((s for s in (4, 3) if s * (bw + bt + tail) * BK * 2 <= SHARED_BUDGET), None)
            programs = triton.cdiv(N, bw) * triton.cdiv(M, bt + tail)
            # at most 2 waves of programs, and each slice at least 4 k-steps (a pipeline's depth)
            valid = [s for s in (1, 2, 3, 4) if programs * s <= 2 * SMS and triton.cdiv(K, BK) >= 4 * s]
            if stages is None or not valid:
                continue
            fill = next((s for s in valid if programs * s >= SMS), valid[-1])
            for split in (s for s in valid if fill <= s <= fill + 1):
                out.append(dict(BW=bw, BT=bt, TAIL=tail, BK=BK, SPLIT=split, warps=warps, stages=stages))
    return out


def name(cfg):
    return f"{cfg['BW']}x({cfg['BT']}+{cfg['TAIL']})/s{cfg['SPLIT']}w{cfg['warps']}p{cfg['stages']}"


def rel_err(c, ref):
    return ((c.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def check_only():
    """Tiny shapes under the interpreter (float16: its bf16 math is unsupported) against float64."""
    device = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
    torch.manual_seed(0)
    ok = True
    for (M, N, K), cfg in [((37, 48, 128), dict(BW=16, BT=16, TAIL=16, BK=32, SPLIT=2)),
                           ((37, 48, 128), dict(BW=16, BT=16, TAIL=0, BK=32, SPLIT=2)),
                           ((37, 40, 96), dict(BW=16, BT=32, TAIL=16, BK=32, SPLIT=1)),
                           ((20, 24, 160), dict(BW=16, BT=16, TAIL=0, BK=32, SPLIT=3))]:
        a = torch.randn(M, K, device=device).half()
        w = torch.randn(N, K, device=device).half()
        c = tail_matmul(a, w.t(), **cfg, warps=4, stages=2)
        ref = a.double() @ w.double().t()
        err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
        ok &= err < 2e-3 and c.dtype == a.dtype
        print(f"M={M} N={N} K={K} {cfg}: rel err {err:.2e} {'ok' if err < 2e-3 else 'FAIL'}")
    print("check-only:", "all ok" if ok else "FAILED")
    return ok


def run_shape(M, N, K, dtype):
    """One shape's row: torch, the default and every config, checked and timed in turns."""
    import triton_impl
    from bench.timing import time_interleaved
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(N, K, device="cuda", dtype=dtype).t()
    ref = a.float() @ b.float()
    fns = [lambda: torch.mm(a, b), lambda: triton_impl.matmul(a, b)]
    row = dict(shape=[M, N, K], default_err=rel_err(fns[1](), ref), configs=[])
    for cfg in configs(M, N, K):
        fn = (lambda cfg=cfg: tail_matmul(a, b, **cfg))
        try:  # compiles here: too much shared memory (OutOfResources) or a failed compile skips the config
            err = rel_err(fn(), ref)
        except Exception as e:
            row["configs"].append(dict(cfg, name=name(cfg), error=f"{type(e).__name__}: {str(e)[:200]}"))
            continue
        row["configs"].append(dict(cfg, name=name(cfg), err=err, ok=err < 2e-2))
        if err < 2e-2:
            fns.append(fn)
    timed = [r for r in row["configs"] if r.get("ok")]
    us = [t.median_ms * 1e3 for t in time_interleaved(fns, warmup_ms=25, rep_ms=30, min_reps=10)]
    row["torch_us"], row["default_us"] = us[:2]
    for r, t in zip(timed, us[2:]):
        r["us"] = t
    for key, pool in (("best", timed), ("best_base", [r for r in timed if r["TAIL"] == 0]),
                      ("best_tail", [r for r in timed if r["TAIL"] > 0])):
        row[key] = min(pool, key=lambda r: r["us"]) if pool else None
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", type=int, nargs="+", help="M N K triples")
    p.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16")
    p.add_argument("--json")
    p.add_argument("--check-only", action="store_true", help="tiny shapes' correctness only (the interpreter)")
    args = p.parse_args()
    if args.shapes and len(args.shapes) % 3:
        p.error("--shapes takes M N K triples")
    if args.check_only:
        raise SystemExit(0 if check_only() else 1)
    shapes = SHAPES if not args.shapes else [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes), 3)]
    torch.manual_seed(0)
    rows = []
    for M, N, K in shapes:
        row = run_shape(M, N, K, getattr(torch, args.dtype))
        rows.append(row)
        bad = [r["name"] for r in row["configs"] if not r.get("ok")]
        print(f"{M}x{N}x{K}: torch {row['torch_us']:.1f} us, default {row['default_us']:.1f}, "
              + ", ".join(f"{r['name']} {r['us']:.1f}" for r in row["configs"] if "us" in r)
              + (f"; failed: {bad}" if bad else ""), flush=True)
    fmt = "{:>16} {:>8} {:>8} {:>28} {:>8} {:>28} {:>8} {:>7} {:>7} {:>7}"
    print(fmt.format("M x N x K", "torch", "default", "best tail cfg", "us", "best TAIL=0 cfg", "us",
                     "t/dflt", "t/tail", "t/base"))
    for row in rows:
        t, bt, bb = row["torch_us"], row["best_tail"], row["best_base"]
        print(fmt.format("x".join(map(str, row["shape"])), f"{t:.1f}", f"{row['default_us']:.1f}",
                         bt["name"] if bt else "-", f"{bt['us']:.1f}" if bt else "-",
                         bb["name"] if bb else "-", f"{bb['us']:.1f}" if bb else "-", f"{t / row['default_us']:.2f}",
                         f"{t / bt['us']:.2f}" if bt else "-", f"{t / bb['us']:.2f}" if bb else "-"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), dtype=args.dtype, sms=SMS, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
