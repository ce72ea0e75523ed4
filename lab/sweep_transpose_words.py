"""The transposes for unaligned rows (CUDA ``smem_tiled_words`` and ``smem_tiled_sheared``, Triton
``words``) against the kernels they may replace, on issue 16's unaligned shapes, as a share of the
device copy; each result checked.

    PYTHONPATH=. python3 lab/sweep_transpose_words.py [--tiles] [--sheared] [--fp16] [--triton]

``--tiles`` adds tile sizes (CUDA) and configurations (Triton) beyond the launchers' own;
``--sheared`` adds smem_tiled_sheared's tiles and leaves Triton out; ``--fp16`` leaves float32 out;
``--triton`` leaves CUDA out; ``--near`` sweeps only Triton configurations near the word-pairs
kernel's; ``--shapes R1xC1 [B2xR2xC2 ...]`` (the last option) sweeps those shapes instead of issue 16's.
Triton ``words/el`` is the words kernel loading elements (``WORD_LOADS`` off); the other
Triton ``words`` rows on 2-byte unit-stride rows run the word-pairs kernel.
"""

from __future__ import annotations

import sys

import torch

import cuda_ref
import triton_impl
from bench.ceilings import copy_bandwidth_gbs
from bench.timing import time_gpu
from cuda_ref import _transpose as ct
from triton_impl import _transpose as tt

SHAPES = ((12345, 6789), (4097, 4095), (6789, 12345))
CUDA_TILES = ((64, 64), (128, 32), (128, 64), (256, 32), (256, 64), (384, 32), (512, 32))  # (TILE_R, TILE_C)
SHEARED_TILES = ((64, 64), (128, 32), (128, 64), (128, 128), (256, 32), (256, 64), (64, 128))
TRITON_CONFIGS = ((64, 64, 4), (128, 64, 4), (128, 64, 8), (128, 32, 4), (128, 64, 2), (128, 128, 4),
                  (128, 128, 8), (256, 64, 4), (256, 64, 8), (64, 128, 4), (128, 32, 8), (256, 32, 4),
                  (256, 32, 8), (512, 32, 8), (64, 64, 2), (64, 32, 2), (256, 128, 8), (64, 128, 2),
                  (128, 32, 2), (64, 32, 4), (256, 32, 2), (128, 32, 1), (64, 64, 1))
if "--near" in sys.argv[1:]:  # around the word-pairs kernel's best
    TRITON_CONFIGS = ((128, 32, 4), (128, 32, 2), (64, 32, 4), (256, 32, 2), (128, 32, 1), (64, 64, 1),
                      (64, 64, 2), (256, 32, 4))


def _sheared_fits(tile_r: int, tile_c: int, es: int) -> bool:
    """The kernel's static shared memory (rows of TILE_C + 2 VEC, TILE_R + a sector's elements of
    them) under 48 KiB, and whole chunks per thread."""
    vec = ct._vec(es)
    return (tile_r + 32 // es) * (tile_c + 2 * vec + 1) * es <= 49152 and tile_r % (vec * 256 // tile_c) == 0


def main() -> None:
    tiles, sheared = "--tiles" in sys.argv[1:], "--sheared" in sys.argv[1:]
    ct.SOURCES[ct.FILE] = tuple(sorted(set(ct.SOURCES[ct.FILE]) | {
        f"transpose_smem_tiled_words<unsigned {t}, {r}, {c}>" for t in ("short", "int") for r, c in CUDA_TILES
        if r * c * (2 if t == "short" else 4) <= 32768} | {
        f"transpose_smem_tiled_sheared<unsigned {t}, {r}, {c}>" for t in ("short", "int") for r, c in SHEARED_TILES
        if _sheared_fits(r, c, 2 if t == "short" else 4)}))
    argv = sys.argv[1:]
    shapes = [tuple(map(int, s.split("x"))) for s in argv[argv.index("--shapes") + 1:]] if "--shapes" in argv else SHAPES
    copy = copy_bandwidth_gbs()
    print(f"{torch.cuda.get_device_name(0)}: copy {copy:.0f} GB/s", flush=True)
    for dtype in (torch.float16,) if "--fp16" in sys.argv[1:] else (torch.float16, torch.float32):
        es = torch.empty((), dtype=dtype).element_size()
        for shape in shapes:
            a = torch.rand(shape, device="cuda").to(dtype)
            expected = a.transpose(-1, -2).contiguous()
            nbytes = 2 * a.numel() * es
            cuda = "--triton" not in sys.argv[1:]
            runs = [("cuda", v, None) for v in ("smem_tiled_vec", "smem_tiled_words", "smem_tiled_sheared")] if cuda else []
            runs += [] if sheared else [("triton", v, None) for v in ("blocked", "words")] + [("triton", "words", "el")]
            if (tiles or sheared) and cuda:
                runs += [("cuda", "smem_tiled_sheared", t) for t in SHEARED_TILES
                         if _sheared_fits(*t, es) and t != ct.SHEARED_TILE[es]]
            if tiles and cuda:
                runs += [("cuda", "smem_tiled_words", t) for t in CUDA_TILES
                         if t[0] * t[1] * es <= 32768 and t != ct.WORDS_TILE[es]]
            if tiles:
                runs += [("triton", "words", c) for c in TRITON_CONFIGS if c != tt.WORD_PAIRS_CONFIG.get(es)]
            row = []
            for backend, variant, cfg in runs:
                saved = dict(ct.WORDS_TILE), tt.WORDS_CONFIG, dict(ct.SHEARED_TILE), dict(tt.WORD_PAIRS_CONFIG)
                tt.WORD_LOADS = cfg != "el"
                if cfg == "el":
                    cfg = None
                elif cfg and variant == "smem_tiled_sheared":
                    ct.SHEARED_TILE[es] = cfg
                elif cfg and backend == "cuda":
                    ct.WORDS_TILE[es] = cfg
                elif cfg:
                    tt.WORDS_CONFIG = tt.WORD_PAIRS_CONFIG[es] = cfg
                ct._PLANS.clear()
                tt._PLANS.clear()
                fn = {"cuda": cuda_ref.transpose, "triton": triton_impl.transpose}[backend]
                got = fn(a, variant=variant)
                assert torch.equal(got, expected), (backend, variant, cfg, shape)
                t = time_gpu(lambda: fn(a, variant=variant)).median_ms
                ct.WORDS_TILE.update(saved[0])
                tt.WORDS_CONFIG = saved[1]
                tt.WORD_PAIRS_CONFIG.update(saved[3])
                ct.SHEARED_TILE.update(saved[2])
                name = f"{variant}{'/' + 'x'.join(map(str, cfg)) if cfg else '' if tt.WORD_LOADS else '/el'}"
                tt.WORD_LOADS = True
                row.append(f"{backend[0]}:{name} {nbytes / t / 1e6 / copy:.3f}")
            ct._PLANS.clear()
            tt._PLANS.clear()
            dst = torch.empty_like(a)
            t_copy = time_gpu(lambda: dst.copy_(a)).median_ms
            print(f"{str(dtype)[6:]:8} {'x'.join(map(str, shape)):14} same-size copy {nbytes / t_copy / 1e6 / copy:.3f} | "
                  + "  ".join(row), flush=True)


if __name__ == "__main__":
    main()
