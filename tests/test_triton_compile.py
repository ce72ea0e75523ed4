"""The Triton matmul kernel compiles for sm_90 with every config it can launch, no GPU needed.

The interpreter runs the kernels' logic on CPU but not the compiler: this test lowers every
(dtype, precision, config) that `grouped` and `blocked` launch on a GPU to PTX, in a subprocess
without TRITON_INTERPRET, and checks what the PTX says about precision: 16-bit and TF32 dots use
Hopper tensor cores (wgmma) on the big tiles, exact float32 ("ieee") uses none, and the pipelined
shared-memory buffers fit an H100/H200 SM (227 KiB).
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
from triton_impl import _matmul as triton_matmul
from triton_impl._matmul_configs import _FITTED_16BIT

SCRIPT = r"""
import json
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from bench.resources import _ptxas_report
from triton_impl import _matmul as m
from triton_impl._launch import COMPILE_OPTIONS
fn = m._matmul_kernel
names = fn.arg_names
cases = []
for ty, prec, size in [("fp32", "ieee", 4), ("fp32", "tf32", 4), ("fp16", "tf32", 2), ("bf16", "tf32", 2)]:
    bm, bn, bk, warps, stages = m._blocked_config({4: torch.float32, 2: torch.float16}[size])
    blocked = triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 1},
                            num_warps=warps, num_stages=stages)
    for cfg in m.candidates(size) + [blocked]:
        # what a launch on row-major operands with 16-divisible sizes specializes
        # (the bias: out's pointer, unread; its strides 0; one product: batch strides 0)
        sig = {n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bk")}
        sig.update({n: f"*{ty}" for n in ("a_ptr", "b_ptr", "c_ptr", "bias_ptr")})
        sig.update({n: "constexpr" for n in ("stride_ak", "stride_bn", *cfg.kwargs, "INPUT_PRECISION", "INT_SUMS",
                                             "DOT", "HAS_BIAS", "stride_biasm", "stride_biasn", "stride_ab",
                                             "stride_bb")})
        sig = {n: sig[n] for n in names}
        const = {(names.index(k),): v for k, v in cfg.kwargs.items()}
        const.update({(names.index("stride_ak"),): 1, (names.index("stride_bn"),): 1,
                      (names.index("INPUT_PRECISION"),): prec, (names.index("INT_SUMS"),): False,
                      (names.index("DOT"),): True, (names.index("HAS_BIAS"),): False,
                      (names.index("stride_biasm"),): 0, (names.index("stride_biasn"),): 0,
                      (names.index("stride_ab"),): 0, (names.index("stride_bb"),): 0})
        attrs = {(names.index(n),): [["tt.divisibility", 16]]
                 for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk")}
        k = triton.compile(ASTSource(fn, sig, const, attrs), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages, **COMPILE_OPTIONS})
        ptx = k.asm["ptx"]
        cases.append({"dtype": ty, "precision": prec, "config": str(cfg), "block_m": cfg.kwargs["BLOCK_M"], "block_n": cfg.kwargs["BLOCK_N"],
                      "warps": cfg.num_warps, "shared": k.metadata.shared, "wgmma": "wgmma" in ptx,
                      "mma": "mma.sync" in ptx,
                      "serialized": any(r.serialized for r in _ptxas_report(ptx, 90).values())})
print(json.dumps(cases))
"""


# A script's share of its compiles (``mine()``: is the next job this process's?): the TMA configs
# took 261 s in one process on an H100 machine (a GPU suite lane's longest wait), one after another.
# Each process also says on stderr how many jobs it saw: every shard the same, one case a job.
SHARE = r"""
import atexit, os, sys
_SHARD, _SHARDS = map(int, os.environ.get("COMPILE_SHARD", "0/1").split("/"))
_seen = [0]
atexit.register(lambda: print(f"COMPILE_JOBS {_seen[0]}", file=sys.stderr))


def mine():
    _seen[0] += 1
    return (_seen[0] - 1) % _SHARDS == _SHARD
"""
SHARDS = max(1, min(8, os.cpu_count() or 1))


def compile_in_subprocess(script: str, timeout: int, shards: int = 1) -> list:
    """Run ``script`` (which prints its cases as JSON last) without TRITON_INTERPRET: the real
    compiler, for sm_90, no GPU needed. ``shards``: that many processes at once, each compiling the
    jobs its ``mine()`` takes (a script that calls it), their cases joined."""
    pytest.importorskip("triton.backends.nvidia")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    # (files, not pipes: a process whose pipe filled would wait for its turn to be read)
    logs = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in range(shards)]
    runs = [subprocess.Popen([sys.executable, "-c", SHARE + script], cwd=ROOT, env=dict(env, COMPILE_SHARD=f"{i}/{shards}"),
                             stdout=out, stderr=err, text=True) for i, (out, err) in enumerate(logs)]
    codes = [run.wait(timeout=timeout) for run in runs]
    cases, seen = [], set()
    for code, (out, err) in zip(codes, logs):
        out.seek(0), err.seek(0)
        log = err.read()
        assert code == 0, log[-4000:]
        cases += json.loads(out.read().strip().splitlines()[-1])
        seen.add(int(log.rsplit("COMPILE_JOBS ", 1)[1].split()[0]))
    jobs = seen.pop()
    assert not seen and (jobs == 0 or len(cases) == jobs), (jobs, seen, len(cases))  # (0: no mine() calls)
    return cases


@pytest.fixture(scope="module")
def compiled():
    return compile_in_subprocess(SCRIPT, timeout=600)


def test_every_config_compiles_for_sm90(compiled):
    per_dtype = {size: len(triton_matmul.candidates(size)) + 1 for size in (2, 4)}
    assert len(compiled) == 2 * per_dtype[2] + 2 * per_dtype[4]  # + 1: blocked's config
    for case in compiled:
        assert case["shared"] <= 227 * 1024 and not case["serialized"], case  # (ptxas's C7514 / C7515)


def test_precision_reaches_the_hardware(compiled):
    for case in compiled:
        if case["precision"] == "ieee":
            assert not case["wgmma"] and not case["mma"], f"exact float32 must not use tensor cores: {case}"
        elif case["warps"] >= 4 and case["block_n"] >= 32 and case["block_m"] >= 64:
            assert case["wgmma"], f"expected Hopper tensor cores (wgmma): {case}"
        else:  # 2-warp or 16-row tiles fall back to Ampere-style mma.sync: still tensor cores
            assert case["wgmma"] or case["mma"], case



# ---- the TMA kernel: every candidate tile config, both layouts of b, K whole and split ---------
TMA_SCRIPT = r"""
import json
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from bench.resources import _ptxas_report
from triton_impl import _matmul as m, _matmul_configs as mc, _matmul_tma as mt
from triton_impl._launch import COMPILE_OPTIONS
fn = mt._tma_persistent_kernel
names = fn.arg_names
cases = []
shipped = json.load(open(m._tuning.shipped_path("sm_90")))["entries"]
for ty, prec, size in [("bf16", "tf32", 2), ("fp32", "ieee", 4), ("fp32", "tf32", 4)]:
    configs = {str(c): c for M in (16, 128, 4096) for c in m.candidates(size, "tma", M=M)}
    if ty == "bf16":  # and the tiles of two parts (192 wide), which the fitted model weighs but tuning does not
        configs.update({str(c): c for c in mc._TWO_PART_16BIT})
    # (the bias epilogue, HAS_BIAS 1 and 2, compiled for bfloat16 only: the compile time)
    jobs = [(cfg, job, False) for cfg in configs.values()
            for job in ((1, False, 0), (4, False, 0), (1, True, 0)) + (((1, False, 1), (1, False, 2))
                                                                       if ty == "bf16" else ())]
    if ty == "bf16":  # and each TMA config of the shipped table at its own split, as a fresh install runs it
        def ident(cfg, split):
            return sorted(dict(cfg.kwargs, SPLIT_K=split).items()), cfg.num_warps, cfg.num_stages
        done = [ident(cfg, split) for cfg, (split, c_ptr, bias), _ in jobs if not c_ptr and not bias]
        for key, entry in sorted(shipped.items()):
            cfg = m._tuning._config(entry, key)
            if key.startswith("tma ") and ident(cfg, cfg.kwargs["SPLIT_K"]) not in done:
                done.append(ident(cfg, cfg.kwargs["SPLIT_K"]))
                jobs.append((m._with_split(cfg, 1), (cfg.kwargs["SPLIT_K"], False, 0), True))
    for cfg, (split, c_ptr, bias), from_table in jobs:
        for b_t in (False, True):
            if not mine():
                continue
            kw = dict(cfg.kwargs, SPLIT_K=split)
            bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
            tail = kw.get("N_TAIL", 0)  # (a tile of two parts: b's first bn - tail columns, then tail)
            c_block = [bm, (bn - tail) // 2] if kw["EPILOGUE_SUBTILE"] else [bm, bn]
            b_block = [bn - tail, bk] if b_t else [bk, bn - tail]
            b_tail = ([tail, bk] if b_t else [bk, tail]) if tail else b_block
            # (a split as _tma_run runs one of a wave or so of tiles: its slices handed over in the
            # launch, SPLIT_LAST, c written by the kernel as with K whole)
            sig = {"a_desc": f"tensordesc<{ty}{[bm, bk]}>", "b_desc": f"tensordesc<{ty}{b_block}>",
                   "b_tail_desc": f"tensordesc<{ty}{b_tail}>",
                   "c_desc": f"*{ty}" if c_ptr else f"tensordesc<{ty}{c_block}>", "M": "i32", "N": "i32",
                   "K": "i32", "programs": "i32", "bias_ptr": f"*{ty}", "stride_biasm": "i32",
                   "stride_biasn": "i32", "sk_tiles": "i32", "slots_ptr": "*fp32", "flags_ptr": "*i32"}
            const = dict(kw, STREAM_K=False, A_T=False, B_T=b_t, INPUT_PRECISION=prec,
                         INT_SUMS=False, C_PTR=c_ptr,
                         # as _tma_run sets it for several tiles a program (a tile of two parts: nested)
                         FUSE_K=split == 1 and not c_ptr and not tail,
                         HAS_BIAS=bias, SPLIT_LAST=split > 1 and not tail, N_TAIL=tail)
            if split == 1:
                sig.update(slots_ptr="constexpr", flags_ptr="constexpr")
                const.update(slots_ptr=None, flags_ptr=None)
            sig.update({n: "constexpr" for n in const})
            sig = {n: sig[n] for n in names}
            try:
                k = triton.compile(ASTSource(fn, sig, {(names.index(n),): v for n, v in const.items()}, {}),
                                   target=GPUTarget("cuda", 90, 32),
                                   options={"num_warps": cfg.num_warps,
                                            "num_stages": mt.bias_stages(cfg, size, bias), **COMPILE_OPTIONS})
                shared, ptx = k.metadata.shared, k.asm["ptx"]
            except Exception as exc:  # out of shared memory at compile time
                shared, ptx = None, repr(exc)
            cases.append({"dtype": ty, "precision": prec, "config": str(cfg), "split": split, "b_t": b_t, "c_ptr": c_ptr,
                          "bias": bias, "shipped": from_table,
                          "shared": shared, "wgmma": "wgmma" in ptx,
                          "stage_bytes": cfg.num_stages * (bm + bn) * bk * size,
                          "epilogue_bytes": c_block[0] * c_block[1] * (4 if split > 1 else size),
                          "tma": "cp.async.bulk.tensor" in ptx, "bm": bm, "bn": bn, "swap": kw["SWAP_AB"], "tail": tail,
                          "nested": "Depth=2" in ptx,  # LLVM's loop comments in the PTX
                          "serialized": shared is not None and any(r.serialized for r in _ptxas_report(ptx, 90).values())})
print(json.dumps(cases))
"""


@pytest.fixture(scope="module")
def tma_compiled():
    return compile_in_subprocess(TMA_SCRIPT, timeout=1200, shards=SHARDS)


def test_tma_configs_compile_with_tma_and_fit(tma_compiled):
    """Every tile config fits an SM whole; split (a float32 epilogue tile) only those whose stages
    and epilogue tile pass 227 KiB do not (128x256 with 4 stages), and tuning
    skips them. Loads and stores go through TMA, and 16-bit and TF32 dots run on wgmma where the
    MMA's M extent (BLOCK_N with swap-AB) is 64 or more; the 32-wide few-row tiles run mma.sync.
    With c written by masked stores (C_PTR: rows off 16 bytes) every config fits as well. ptxas
    serializes no config's wgmma (C7514 / C7515: a wait after each MMA)."""
    for case in tma_compiled:
        too_big = case["split"] > 1 and case["stage_bytes"] + case["epilogue_bytes"] > 227 * 1024
        if too_big:
            continue
        assert case["shared"] is not None and case["shared"] <= 227 * 1024, case
        assert case["tma"] and not case["serialized"], case
        if case["precision"] != "ieee" and (case["bn"] if case["swap"] else case["bm"]) >= 64:
            assert case["wgmma"], case


def test_the_shipped_tables_configs_compile_and_fit(tma_compiled):
    """Each TMA config of triton_impl/tuned_sm_90.json that the candidates' cases above do not hold
    (a split other than 1 or 4), at its split, both layouts of b: it compiles with this triton for
    sm_90, through TMA (and wgmma where the MMA's M extent is 64 or more), within an SM's shared
    memory."""
    shipped = [case for case in tma_compiled if case["shipped"]]
    assert shipped
    for case in shipped:
        assert case["shared"] is not None and case["shared"] <= 227 * 1024, case
        assert case["tma"] and (case["wgmma"] or (case["bn"] if case["swap"] else case["bm"]) < 64), case


def test_tma_fused_k_is_one_loop(tma_compiled):
    """With K whole and c through a descriptor (FUSE_K, as a launch with several tiles a program
    sets it), the tile and K loops compile to one loop, so the next tile's loads are issued before
    this tile's epilogue. Nested, each tile waited for its first loads (H200: 1-5 points x torch;
    bench/results/logs/h200-2026-11-27-s27-fuse-ab.txt); a Triton that stops fusing them would make this fail."""
    fused = [c for c in tma_compiled if c["split"] == 1 and not c["c_ptr"] and c["shared"] is not None and not c["tail"]]
    assert fused
    for case in fused:
        assert not case["nested"], case


# ---- the kernels of batches, groups and FP8, each script compiling through one helper ----------
SM90 = r"""
import json
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from bench.resources import _ptxas_report
from triton_impl._launch import COMPILE_OPTIONS


def compile_sm90(fn, sig, const, cfg):
    # fn for sm_90, the runtime arguments' types in sig and the constexprs in const: (what the
    # checks read of the kernel, its PTX)
    names = fn.arg_names
    sig = {n: dict(sig, **{c: "constexpr" for c in const})[n] for n in names}
    k = triton.compile(ASTSource(fn, sig, {(names.index(n),): v for n, v in const.items()}, {}),
                       target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages, **COMPILE_OPTIONS})
    ptx = k.asm["ptx"]
    serialized = any(r.serialized for r in _ptxas_report(ptx, 90).values())  # (ptxas's C75xx)
    return {"shared": k.metadata.shared, "wgmma": "wgmma" in ptx, "tma": "cp.async.bulk.tensor" in ptx,
            "nested": "Depth=2" in ptx, "serialized": serialized}, ptx
"""

# the TMA walk over a batch: 3-D descriptors, every config it picks, each layout
BATCHED_SCRIPT = SM90 + r"""
from triton_impl import _matmul_batched as mb, _matmul_configs as mc
configs = {str(c): c for c in mc._TMA_16BIT + [mc.batched_tma_config(2048, 2048, 128, 64, 132)]}
cases = []
for cfg in configs.values():
    kw = cfg.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    for a_t, b_t in ((False, False), (False, True), (True, False)):
        c_block = [1, bm, bn // 2] if kw["EPILOGUE_SUBTILE"] else [1, bm, bn]
        sig = {"a_desc": f"tensordesc<bf16{[1, bk, bm] if a_t else [1, bm, bk]}>",
               "b_desc": f"tensordesc<bf16{[1, bn, bk] if b_t else [1, bk, bn]}>",
               "c_desc": f"tensordesc<bf16{c_block}>", "M": "i32", "N": "i32", "K": "i32", "count": "i32",
               "programs": "i32"}
        const = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=kw["GROUP_M"], EPILOGUE_SUBTILE=kw["EPILOGUE_SUBTILE"],
                     A_T=a_t, B_T=b_t, A_ONE=False, B_ONE=False, INPUT_PRECISION="tf32")
        case, _ = compile_sm90(mb._tma_batched_kernel, sig, const, cfg)
        cases.append(dict(case, config=str(cfg), a_t=a_t, b_t=b_t))
print(json.dumps(cases))
"""


def test_batched_tma_configs_compile_fused_and_fit():
    """The TMA walk's kernel, with each config it picks and each layout (k.mT, a column-major a):
    its 3-D tiles fit an SM, load and store by TMA, multiply on wgmma, and the tile and K loops are
    one loop (the next tile's loads issued before this one's epilogue)."""
    cases = compile_in_subprocess(BATCHED_SCRIPT, timeout=900)
    assert len(cases) == 3 * 9
    for case in cases:
        assert case["shared"] <= 227 * 1024 and case["tma"] and case["wgmma"] and not case["nested"], case
        assert not case["serialized"], case  # (ptxas's C7514 / C7515: wgmma serialized)


# stream-K: each tile the fitted model chooses from, b either way, with and without a bias row
STREAM_K_SCRIPT = SM90 + r"""
from triton_impl import _matmul_configs as mc, _matmul_tma as mt
cases = []
for cfg in mc._FITTED_16BIT:
    if cfg.kwargs.get("N_TAIL"):  # (stream-K runs such a tile's first part: the config before it)
        continue
    kw = cfg.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    for b_t, bias in ((False, 0), (True, 0), (True, 1)):
        if not mine():
            continue
        c_block = [bm, bn // 2] if kw["EPILOGUE_SUBTILE"] else [bm, bn]
        sig = {"a_desc": f"tensordesc<bf16{[bm, bk]}>", "b_desc": f"tensordesc<bf16{[bn, bk] if b_t else [bk, bn]}>",
               "b_tail_desc": f"tensordesc<bf16{[bn, bk] if b_t else [bk, bn]}>", "c_desc": f"tensordesc<bf16{c_block}>", "bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32",
               "programs": "i32", "stride_biasm": "i32", "stride_biasn": "i32", "sk_tiles": "i32",
               "slots_ptr": "*fp32", "flags_ptr": "*i32"}
        const = dict(kw, A_T=False, B_T=b_t, INPUT_PRECISION="tf32", INT_SUMS=False, C_PTR=False, FUSE_K=True,
                     HAS_BIAS=bias, STREAM_K=True, SPLIT_LAST=False, N_TAIL=0)
        case, ptx = compile_sm90(mt._tma_persistent_kernel, sig, const, cfg)
        cases.append(dict(case, config=str(cfg), b_t=b_t, bias=bias, release="atom.global.gpu.release.exch.b32" in ptx,
                          acquire="atom.global.acquire.gpu.cas.b32" in ptx))
print(json.dumps(cases))
"""


def test_stream_k_kernel_compiles_with_tma_and_fits():
    """The TMA kernel with STREAM_K, each tile the fitted model chooses from, b either way, a bias
    row or none: its stages fit an SM, a and b load by TMA, wgmma multiplies where the MMA's M
    extent is 64 or more, and the hand-over's flag is raised with release and taken with acquire semantics."""
    cases = compile_in_subprocess(STREAM_K_SCRIPT, timeout=900, shards=SHARDS)
    assert len(cases) == 3 * len([c for c in _FITTED_16BIT if not c.kwargs.get("N_TAIL")])
    for case in cases:
        assert case["shared"] <= 227 * 1024 and case["tma"] and case["wgmma"] and not case["serialized"], case
        assert case["release"] and case["acquire"], case


GROUPED_SCRIPT = SM90 + r"""
from triton_impl import _grouped as gr
cases = []
for cfg, b_t in ((cfg, b_t) for cfg in gr.CONFIGS.values() for b_t in (False, True)):
    kw = cfg.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    sig = {"a_desc": f"tensordesc<bf16{[bm, bk]}>", "b_desc": f"tensordesc<bf16{[1, bn, bk] if b_t else [1, bk, bn]}>",
           "c_ptr": "*bf16", "offs_ptr": "*i32", "T": "i32", "N": "i32", "K": "i32", "G": "i32", "programs": "i32",
           "stride_cm": "i32", "stride_cn": "i32", "stride_offs": "i32"}
    case, _ = compile_sm90(gr._grouped_kernel, sig, dict(kw, B_T=b_t, INPUT_PRECISION="tf32"), cfg)
    cases.append(dict(case, b_t=b_t))
# b's gradient (pointer loads): the last case
cfg = gr.WEIGHT_GRAD_CONFIG
sig = {"a_ptr": "*bf16", "g_ptr": "*bf16", "c_ptr": "*bf16", "offs_ptr": "*i32"}
sig.update({n: "i32" for n in ("T", "K", "N", "stride_am", "stride_ak", "stride_gm", "stride_gn", "stride_cg",
                               "stride_ck", "stride_cn", "stride_offs")})
case, _ = compile_sm90(gr._weight_grad_kernel, sig, dict(cfg.kwargs, INPUT_PRECISION="tf32"), cfg)
cases.append(dict(case, weight_grad=True))
print(json.dumps(cases))
"""


def test_grouped_kernel_compiles_with_tma_and_fits():
    """grouped_mm's kernel, each config, b either way: its stages fit an SM, a and b load by TMA,
    wgmma multiplies; b's gradient's kernel: its stages fit, wgmma multiplies."""
    *cases, weight_grad = compile_in_subprocess(GROUPED_SCRIPT, timeout=600)
    assert len(cases) == 2 * 2
    for case in cases:
        assert case["shared"] <= 227 * 1024 and case["tma"] and case["wgmma"] and not case["serialized"], case
    assert weight_grad["shared"] <= 227 * 1024 and weight_grad["wgmma"] and not weight_grad["serialized"], weight_grad


FP8_SCRIPT = SM90 + r"""
from triton_impl import _matmul_fp8 as f8
# every (config, block scales, fast accumulation, b's dtypes) _config picks: b e4m3 with c bf16, or
# e5m2 (a mixed product: 128 x 128 only) with c fp32
both, e4m3 = (("fp8e4nv", "bf16"), ("fp8e5", "fp32")), (("fp8e4nv", "bf16"),)
# and K in runs; 64-row tiles
picks = [(f8.CONFIG, True, False, both, 1), (f8.CONFIG, False, False, both, 1), (f8.CONFIG, False, True, both, 1),
         (f8.CONFIGS["promoted"], False, False, e4m3, 1), (f8.CONFIGS["fast"], False, True, e4m3, 1),
         (f8.CONFIG, True, False, e4m3, 4), (f8.CONFIG, False, False, e4m3, 4), (f8.CONFIG, False, True, e4m3, 4),
         (f8.CONFIG_FEW, True, False, both, 1), (f8.CONFIG_FEW, False, False, both, 4)]
cases = []
for cfg, block, fast, types, split in picks:
    kw = cfg.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    for b_ty, c_ty in types:
        sig = {"a_desc": f"tensordesc<fp8e4nv{[bm, bk]}>", "b_desc": f"tensordesc<{b_ty}{[bn, bk]}>",
               "c_ptr": f"*{c_ty}", "sa_ptr": "*fp32", "sb_ptr": "*fp32", "slots_ptr": "*fp32", "flags_ptr": "*i32"}
        sig.update({n: "i32" for n in ("M", "N", "K", "programs", "stride_cm", "stride_cn", "stride_sam",
                                       "stride_sak", "stride_sbk", "stride_sbn")})
        const = dict(kw, BLOCK_SCALES=block, SCALE_BLOCK=f8.SCALE_BLOCK, FAST_ACCUM=fast, SPLIT_K=split)
        case, ptx = compile_sm90(f8._fp8_kernel, sig, const, cfg)
        cases.append(dict(case, tile=(bm, bn), block=block, fast=fast, b=b_ty, c=c_ty, split=split,
                          fp8_wgmma=any("wgmma" in l and ".e4m3" in l for l in ptx.splitlines())))
print(json.dumps(cases))
"""


def test_fp8_kernel_compiles_to_fp8_wgmma_and_fits():
    """scaled_mm's kernel, each tile and accumulation it picks, b e4m3 or e5m2, c bf16 or fp32, K
    whole or in runs: FP8 wgmma, TMA loads, its stages fit an SM, and with K whole the tile and K
    loops fused (the next tile's loads during this epilogue; a run's bounds differ by item); chained and block-scaled products never have their wgmma serialized (the
    compiler's promotion may be: ptxas's C7514 on the 256 x 128 tile with triton 3.6, on every
    promoted tile with 3.9; decision 023)."""
    cases = compile_in_subprocess(FP8_SCRIPT, timeout=600)
    assert len(cases) == 15
    for case in cases:
        assert case["shared"] <= 227 * 1024 and case["fp8_wgmma"] and case["tma"], case
        assert case["nested"] == (case["split"] > 1), case
        assert not (case["serialized"] and (case["fast"] or case["block"])), case


# ---- fma_ws: the Gluon kernel (exact float32), c through a descriptor and by masked stores ----
FMA_SCRIPT = r"""
import json
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource

from bench.resources import _ptxas_report
from triton_impl import _matmul_fma as f
from triton_impl._launch import COMPILE_OPTIONS
fn = f.fma_ws_kernel
names = fn.arg_names
blocks = {"a_desc": (f.BLOCK_M, f.BLOCK_K), "b_desc": (f.BLOCK_K, f.BLOCK_N), "c": (f.BLOCK_M, f.BLOCK_N)}
cases = []
for c_desc in (False, True):
    sig = {n: "tensordesc<fp32[%d, %d],%r>" % (*blk, f.shared_layout(blk)) for n, blk in blocks.items()}
    if not c_desc:
        sig["c"] = "*fp32"
    sig.update(ws="*fp32", M="i32", N="i32", K="i32", N_DP="i32", L="i32", J="i32")
    const = dict(BM=f.BLOCK_M, BN=f.BLOCK_N, BK=f.BLOCK_K, NSTAGE=f.STAGES, GROUP_M=8, KS=f.K_STEP,
                 ACC=f.acc_layout(), C_DESC=c_desc)
    sig.update({n: "constexpr" for n in const})
    sig = {n: sig[n] for n in names}
    # what a launch with 16-divisible sizes specializes
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in ("M", "N", "K", "ws") + (() if c_desc else ("c",))}
    k = triton.compile(GluonASTSource(fn, sig, {(names.index(n),): v for n, v in const.items()}, attrs),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": f.WARPS, **COMPILE_OPTIONS})
    ptx = k.asm["ptx"]
    res = _ptxas_report(ptx, 90)["fma_ws_kernel"]
    cases.append({"c_desc": c_desc, "shared": k.metadata.shared, "spills": res.spill_stores + res.spill_loads,
                  "tensor_cores": "wgmma" in ptx or "mma.sync" in ptx, "tma": "cp.async.bulk.tensor" in ptx,
                  "setmaxnreg": "setmaxnreg" in ptx, "ffma": ptx.count("fma.rn.f32")})
print(json.dumps(cases))
"""


def test_fma_ws_compiles_exact_and_fits():
    """fma_ws lowers for sm_90 with both epilogues: TMA loads, a producer warp (setmaxnreg), float32
    FMAs and no tensor core, no spills, its stages within 227 KiB."""
    from triton_impl import _matmul_fma
    if not _matmul_fma.AVAILABLE:
        pytest.skip("this triton has no Gluon")
    cases = compile_in_subprocess(FMA_SCRIPT, timeout=600)
    assert [c["c_desc"] for c in cases] == [False, True]
    for case in cases:
        assert case["shared"] <= 227 * 1024 and case["spills"] == 0, case
        assert case["tma"] and case["setmaxnreg"] and not case["tensor_cores"], case
        assert case["ffma"] >= _matmul_fma.BLOCK_K * 64, case  # a k slice's 8 x 8 products, unrolled


# ---- ws_fp8: the Gluon FP8 kernel, its warpgroups partitions of their own -----------------------
FP8_WS_SCRIPT = r"""
import json
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource

from bench.resources import _ptxas_report
from triton_impl import _matmul_fp8_ws as w
from triton_impl._launch import COMPILE_OPTIONS
fn = w.fp8_ws_kernel
names = fn.arg_names
cases = []
# (tile columns, block scales, chained, b's dtype, c's): promoted per tensor or row, blocks, chained,
# chained 256 wide, a mixed product (e4m3 x e5m2)
# (consumers, tile columns, block scales, chained, b's dtype, c's): promoted per tensor or row on two
# and three consumers, blocks, chained, chained 256 wide, a mixed product (e4m3 x e5m2)
for consumers, bn, block, fast, b_ty, c_ty in [(2, 128, False, False, "fp8e4nv", "bf16"),
                                               (3, 128, False, False, "fp8e4nv", "bf16"),
                                               (3, 128, True, False, "fp8e4nv", "fp32"),
                                               (2, 128, False, True, "fp8e4nv", "bf16"),
                                               (2, 256, False, True, "fp8e4nv", "bf16"),
                                               (2, 128, False, False, "fp8e5", "bf16")]:
    blocks = {"a_desc": ((w.WG_M, w.BK), "fp8e4nv", "float8e4nv"),
              "b_desc": ((bn, w.BK), b_ty, "float8e4nv" if b_ty == "fp8e4nv" else "float8e5")}
    sig = {n: "tensordesc<%s[%d, %d],%r>" % (ty, *blk, w.shared_layout(blk, gl_ty))
           for n, (blk, ty, gl_ty) in blocks.items()}
    sig.update(c_ptr=f"*{c_ty}", sa_ptr="*fp32", sb_ptr="*fp32")
    sig.update({n: "i32" for n in ("M", "N", "K", "programs", "stride_cm", "stride_sam", "stride_sak", "stride_sbk",
                                   "stride_sbn")})
    const = dict(CONSUMERS=consumers, BN=bn, STAGES=w.STAGES, GROUP_M=8, BLOCK_SCALES=block, FAST_ACCUM=fast,
                 ACC=w.acc_layout(bn))
    sig.update({n: "constexpr" for n in const})
    sig = {n: sig[n] for n in names}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in ("M", "N", "K", "c_ptr", "stride_cm")}
    k = triton.compile(GluonASTSource(fn, sig, {(names.index(n),): v for n, v in const.items()}, attrs),
                       target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "maxnreg": w.REGS[consumers][2], **COMPILE_OPTIONS})
    ptx = k.asm["ptx"]
    res = _ptxas_report(ptx, 90)["fp8_ws_kernel"]
    mma = sorted({l.split()[0] for l in ptx.splitlines() if "wgmma.mma_async" in l})
    cases.append({"consumers": consumers, "bn": bn, "block": block, "fast": fast, "b": b_ty, "shared": k.metadata.shared,
                  "registers": res.registers, "spills": res.spill_stores + res.spill_loads, "mma": mma,
                  "serialized": res.serialized,
                  "tma": "cp.async.bulk.tensor" in ptx, "setmaxnreg": "setmaxnreg" in ptx,
                  "waits": ptx.count("wgmma.wait_group")})
print(json.dumps(cases))
"""


def test_fp8_ws_compiles_to_fp8_wgmma_in_partitions():
    """ws_fp8 lowers for sm_90a in every mode it plans: FP8 wgmma m64 x BN (e4m3, or e4m3 x e5m2),
    in two or three consumer partitions (each its own MMAs and waits, none serialized by ptxas)
    beside a TMA producer (setmaxnreg: its registers handed to the consumers), within the launch's
    registers and no spills, its stages within 227 KiB."""
    from triton_impl import _matmul_fp8_ws
    if not _matmul_fp8_ws.AVAILABLE:
        pytest.skip("this triton has no Gluon")
    cases = compile_in_subprocess(FP8_WS_SCRIPT, timeout=600)
    assert len(cases) == 6
    for case in cases:
        b = "e4m3" if case["b"] == "fp8e4nv" else "e5m2"
        assert case["mma"] == [f"wgmma.mma_async.sync.aligned.m64n{case['bn']}k32.f32.e4m3.{b}"], case
        assert case["tma"] and case["setmaxnreg"] and case["waits"] >= 2, case
        assert case["shared"] <= 227 * 1024 and case["spills"] == 0 and case["registers"] <= _matmul_fp8_ws.REGS[case["consumers"]][2], case
        assert not case["serialized"], case  # (ptxas's C7514: what pairs of products in a warpgroup drew)


ROWS_SCRIPT = r"""
import json
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource

from bench.resources import _ptxas_report
from triton_impl import _matmul as m, _matmul_fma as f
from triton_impl._launch import COMPILE_OPTIONS
fn = f.few_rows_ws_kernel
names = fn.arg_names
cases = []
for M, w_kmajor in ((16, True), (64, True), (65, True), (16, False), (64, False), (65, False)):  # each tile, W.t() or b row-major
    cfg = m.few_rows_ws_config(M)
    bm, bn, bk = (cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    blocks = {"a_desc": (bm, bk), "w_desc": (bn, bk) if w_kmajor else (bk, bn)}
    sig = {n: "tensordesc<fp32[%d, %d],%r>" % (*blk, f.shared_layout(blk)) for n, blk in blocks.items()}
    sig.update(c="*fp32", M="i32", N="i32", K="i32", k_per_split="i32", split_stride="i32")
    const = dict(BM=bm, BN=bn, BK=bk, NSTAGE=cfg.num_stages, L3=f.rows_layout(cfg.num_warps, bm), W_KMAJOR=w_kmajor)
    sig.update({n: "constexpr" for n in const})
    sig = {n: sig[n] for n in names}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in ("c", "M", "N", "K", "k_per_split", "split_stride")}
    k = triton.compile(GluonASTSource(fn, sig, {(names.index(n),): v for n, v in const.items()}, attrs),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": cfg.num_warps, **COMPILE_OPTIONS})
    ptx = k.asm["ptx"]
    res = _ptxas_report(ptx, 90)["few_rows_ws_kernel"]
    cases.append({"warps": cfg.num_warps, "w_kmajor": w_kmajor, "shared": k.metadata.shared, "spills": res.spill_stores + res.spill_loads,
                  "tensor_cores": "wgmma" in ptx or "mma.sync" in ptx, "tma": "cp.async.bulk.tensor" in ptx,
                  "vector_shared_bytes": 16 * ptx.count("ld.shared.v4.") + 8 * ptx.count("ld.shared.v2.")})
print(json.dumps(cases))
"""


def test_few_rows_ws_compiles_exact_and_fits():
    """few_rows_ws lowers for sm_90 with both tiles, W read K-major or as a row-major b's (k, n)
    tiles: TMA loads, no tensor core, no spills, a thread's part of each stage (16 rows of a and 2
    of W, 16 k each) read by vector shared loads (triton 3.6, W.t(): 16- and 8-byte ones in the
    PTX, which ptxas joins into 72 16-byte LDS a stage; a row-major b: a k's 2 rows of W in one
    8-byte load). The row-major b's 8-warp form spills 4 registers (in SASS: two local loads a stage
    of 512 FFMAs a thread)."""
    from triton_impl import _matmul_fma as f
    if not f.AVAILABLE:
        pytest.skip("this triton has no Gluon")
    cases = compile_in_subprocess(ROWS_SCRIPT, timeout=600)
    assert [(c["warps"], c["w_kmajor"]) for c in cases] == [(4, True), (8, True), (8, True), (4, False), (8, False), (8, False)]
    for case in cases:
        assert case["shared"] <= 227 * 1024 and case["spills"] <= (0 if case["w_kmajor"] else 16), case
        assert case["tma"] and not case["tensor_cores"], case
        assert case["vector_shared_bytes"] >= (f.ROWS_BM + f.ROWS_PER_THREAD) * f.ROWS_BK * 4, case


# few_rows: its one-row tiles and a 16-row one, K slices summed by a second kernel or in the launch
FEW_ROWS_SCRIPT = r"""
import json
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from bench.resources import _ptxas_report
from triton_impl import _matmul_fp32 as fp
from triton_impl._launch import COMPILE_OPTIONS
fn = fp._few_rows_kernel
names = fn.arg_names
cases = []
for M, N, K in ((1, 40000, 4096), (1, 600, 7168), (16, 4096, 4096)):
    cfg = fp.few_rows_config(M, N, K, 132)
    for last in (False, True):
        # (a and b row-major: unit strides specialized, as a launch does; without LAST no buffers)
        const = dict({k: cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}, LAST=last, stride_ak=1, stride_bn=1,
                     **({} if last else {"flags_ptr": None, "slots_ptr": None}))
        sig = dict(a_ptr="*fp32", b_ptr="*fp32", c_ptr="*fp32", M="i32", N="i32", K="i32", stride_am="i32",
                   stride_bk="i32", k_per_split="i32", split_stride="i32", flags_ptr="*i32", slots_ptr="*fp32")
        sig.update({n: "constexpr" for n in const})
        sig = {n: sig[n] for n in names}
        k = triton.compile(ASTSource(fn, sig, {(names.index(n),): v for n, v in const.items()}, {}),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": cfg.num_warps, **COMPILE_OPTIONS})
        ptx = k.asm["ptx"]
        res = _ptxas_report(ptx, 90)["_few_rows_kernel"]
        cases.append({"tile": [cfg.kwargs[x] for x in ("BLOCK_M", "BLOCK_N", "BLOCK_K")], "last": last,
                      "regs": res.registers, "spills": res.spill_stores + res.spill_loads,
                      "acq_rel_count": "atom.global.gpu.acq_rel.add" in ptx})
print(json.dumps(cases))
"""


def test_few_rows_compiles_in_registers():
    """few_rows lowers for sm_90 with the one-row tiles (1 x 256 x 16, 1 x 16 x 64) and a 16-row
    one, with and without the one-launch split (LAST), a and b row-major: no spills, the one-row
    tiles in 128 registers or fewer (four 4-warp programs an SM, as ``few_rows_slices`` counts), and
    LAST's count taken with acq_rel semantics."""
    cases = compile_in_subprocess(FEW_ROWS_SCRIPT, timeout=600)
    assert [(c["tile"], c["last"]) for c in cases] == [(t, last) for t in ([1, 256, 16], [1, 16, 64], [16, 8, 64])
                                                       for last in (False, True)]
    for case in cases:
        assert case["spills"] == 0 and case["acq_rel_count"] == case["last"], case
        assert case["tile"][0] > 1 or case["regs"] <= 128, case


FUSION_SCRIPT = r"""
import json
import warnings
import torch
import triton_impl
from bench import resources
_, launch, args, _ = next(iter(triton_impl.launches("matmul", torch.float32)))
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    k = resources._triton_compile(launch.fn, args, launch.meta, launch.options.get("num_warps", 4),
                                  launch.options.get("num_stages", 3), 90)
print(json.dumps([k.metadata.enable_fp_fusion, [str(w.message) for w in rec if "FP_FUSION" in str(w.message)]]))
"""


def test_compiles_say_fp_fusion_whatever_tritons_default():
    """Every compile (a launch's first call, bench resources, these checks) passes COMPILE_OPTIONS:
    contraction into FMAs on, as the kernels were measured, where Triton's default turns it off in
    3.10 (and 3.9 warns of that on every compile that leaves it unsaid)."""
    fusion, warned = compile_in_subprocess(FUSION_SCRIPT, timeout=300)
    assert fusion is True and not warned, warned


GEMV_SCRIPT = r"""
import json
import re
from bench import resources
from triton_impl import _gemv as g
cases = []
for M, K, size in [(72664, 1416, 2), (72664, 1417, 2), (30000, 1412, 4), (8192, 8192, 2), (123832, 56, 2), (5000, 44, 4)]:
    ptr = "*bf16" if size == 2 else "*fp32"
    launch = g.plan_launches("blocked_row", M, K, size, 132)[0]
    args = dict(a_ptr=ptr, x_ptr=ptr, y_ptr=ptr, M=M, K=K, PIECE=launch.meta["BLOCK_K"] * -(-K // launch.meta["BLOCK_K"]),
                stride_am=K, stride_ak=1, stride_ym=1, stride_ab=0, stride_xb=0, stride_yb=0)
    k = resources._triton_compile(launch.fn, args, launch.meta, launch.options["num_warps"], 3, 90)
    loads = re.findall(r"ld\.global(?:\.nc)?(\.v4)?\.b(\d+)", k.asm["ptx"])
    cases.append({"K": K, "size": size, "row_vec": launch.meta["ROW_VEC"], "k_vec": launch.meta["K_VEC"],
                  "tile_bytes": launch.meta["BLOCK_M"] * launch.meta["BLOCK_K"] * size // (32 * launch.options["num_warps"]),
                  "vector_bytes": 16 * sum(1 for v, _ in loads if v), "scalar_loads": sum(1 for v, _ in loads if not v)})
for M, K, size in [(72664, 1417, 2), (30001, 1411, 4)]:  # phased: rows off 16 bytes, both branches
    ptr = "*bf16" if size == 2 else "*fp32"
    launch = g.plan_launches("phased", M, K, size, 132)[0]
    args = dict(a_ptr=ptr, x_ptr=ptr, y_ptr=ptr, M=M, K=K, stride_am=K, stride_ym=1, end=M * K)
    k = resources._triton_compile(launch.fn, args, launch.meta, launch.options["num_warps"], 3, 90)
    loads = re.findall(r"ld\.global(?:\.nc)?(\.v4)?\.b(\d+)", k.asm["ptx"])
    cases.append({"K": K, "size": size, "variant": "phased", "vector_bytes": 16 * sum(1 for v, _ in loads if v),
                  "scalar_loads": sum(1 for v, _ in loads if not v)})
print(json.dumps(cases))
"""


def test_gemv_whole_tiles_load_16_byte_vectors():
    """blocked_row loads A (and x) in 16-byte vectors wherever rows start on 16 bytes and K is a
    whole count of vectors, the masked tail tile too (K = 56 bf16 is only a tail: it was 72
    element loads a thread); rows off 16 bytes (an odd K) stay element loads (``phased`` is the
    variant for those). A whole tile's bytes of A a thread (bf16 8 x 512 on 128 threads: 64, 8 x 1024:
    128; float32 16 x 512 on 256: 128) all go in vectors."""
    cases = compile_in_subprocess(GEMV_SCRIPT, timeout=600)
    by_k = {(c["K"], c["size"]): c for c in cases if "variant" not in c}
    for key in ((1416, 2), (1412, 4), (8192, 2), (56, 2), (44, 4)):
        case = by_k[key]
        assert case["row_vec"] == case["k_vec"] == 16 // key[1], case
        assert case["vector_bytes"] >= case["tile_bytes"] >= 64 and case["scalar_loads"] == 0, case
    assert by_k[(1417, 2)]["row_vec"] == 1 and by_k[(1417, 2)]["vector_bytes"] <= 16, by_k[(1417, 2)]  # (x's)
    for case in (c for c in cases if c.get("variant") == "phased"):  # (the vector A's end cuts: element loads)
        assert case["vector_bytes"] >= 128, case
