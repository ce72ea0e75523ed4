"""The catalogs: each variant declared once (kernel_common/catalog.py), and what is derived from them
(a backend's variants(), the harness registry, the README's variant tables)."""

import pathlib

import pytest
import torch

import cuda_ref
import triton_impl
from bench import registry
from cuda_ref import _gemv as cuda_gemv, _matmul as cuda_matmul, _transpose as cuda_transpose
from cuda_ref.catalog import RECORDS as CUDA
from kernel_common.catalog import Variant, lookup, names, torch_dtypes
from triton_impl.catalog import RECORDS as TRITON

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("algorithm", registry.ALGORITHMS)
def test_readme_variant_tables_are_the_catalogs(algorithm):
    """The README's variant table of each algorithm is the one the catalogs give, row for row."""
    table = registry.variant_table(algorithm)
    assert table in README.read_text(), (
        f"README.md's {algorithm} table differs from the catalogs: replace it with the output of\n"
        f"python -c \"from bench import registry; print(registry.variant_table('{algorithm}'))\"")


@pytest.mark.parametrize("package,records", [(cuda_ref, CUDA), (triton_impl, TRITON)])
def test_variants_and_registry_come_from_the_catalog(package, records):
    backend = {"cuda_ref": "cuda", "triton_impl": "triton"}[package.__name__]
    for algorithm in registry.ALGORITHMS:
        assert package.variants(algorithm) == names(records, algorithm)
        rows = registry.select(algorithm, backend)
        assert [i.variant for i in rows] == [r.name for r in records if r.algorithm == algorithm]
        for i in rows:
            r = lookup(records, algorithm, i.variant)
            assert (i.dtypes, i.layout, i.needs_gpu, i.max_k) == (r.dtypes, r.layout, r.gpu_only, r.max_k)
    assert all(r.gpu_only for r in CUDA)


def test_every_cuda_variant_has_its_kernel():
    """The CUDA modules' kernel maps cover exactly the catalog's names (a record without a kernel, or
    a kernel without a record, fails here rather than at a user's call)."""
    assert set(cuda_transpose.KERNELS) == set(names(CUDA, "transpose"))
    assert set(cuda_gemv.KERNELS) == set(names(CUDA, "gemv"))
    assert {r.layout for r in CUDA if r.algorithm == "gemv"} == {"row", "col"}
    # matmul's dtypes come from the records: the float32 walk takes float32 alone, wgmma int8 too
    assert cuda_matmul.VARIANT_DTYPES["wgmma"] == (torch.float16, torch.bfloat16, torch.int8)
    assert "pipelined" in cuda_matmul.FLOAT32_ONLY and "naive" not in cuda_matmul.FLOAT32_ONLY


def test_a_catalog_names_one_default():
    a = Variant("x", "a", "first")
    b = Variant("x", "b", "second", default=True)
    assert names((a, b), "x") == ("b", "a")
    with pytest.raises(ValueError, match="one default"):
        names((a,), "x")
    with pytest.raises(ValueError, match="one default"):
        names((b, Variant("x", "c", "third", default=True)), "x")
    with pytest.raises(KeyError, match="no x variant named 'z'"):
        lookup((a, b), "x", "z")
    assert torch_dtypes(Variant("x", "a", "", dtypes=("float32", "tf32", "int8")), ()) == (torch.float32, torch.int8)


@pytest.mark.parametrize("algorithm,dtype", [(a, d) for a in registry.ALGORITHMS
                                              for d in (torch.float32, torch.bfloat16, torch.int8)
                                              if (a, d) != ("gemv", torch.int8)])  # (gemv takes no int8)
def test_launches_are_public_and_name_what_their_sources_compile(algorithm, dtype):
    """``cuda_ref.launches`` lists every variant that takes the dtype (each launch an instance its
    sources compile, at the shape its record names); ``triton_impl.launches`` the pointer kernels'
    (matmul) or every variant's launches. bench resources reads the backends through these alone."""
    compiled = {n for names_ in cuda_ref.sources(algorithm).values() for n in names_}
    rows = cuda_ref.launches(algorithm, dtype)
    takes = [r.name for r in CUDA if r.algorithm == algorithm
             and (algorithm != "matmul" or dtype in torch_dtypes(r, ("float32", "float16", "bfloat16")))]
    assert set(takes) <= {v for v, *_ in rows}
    for variant, launch, shape in rows:
        assert launch.name in compiled, (variant, launch.name)
        assert shape == (lookup(CUDA, algorithm, variant).shown_at or
                         {"transpose": (16384, 16384), "gemv": (16384, 16384), "matmul": (4096, 4096, 4096)}[algorithm])
    if dtype == torch.int8 and algorithm != "transpose":
        return
    for variant, launch, args, shape in triton_impl.launches(algorithm, dtype):
        assert variant in triton_impl.variants(algorithm)
        assert set(args) | set(launch.meta) >= set(launch.fn.arg_names), (variant, sorted(launch.fn.arg_names))


@pytest.mark.parametrize("module", ["cuda_ref._matmul", "triton_impl._matmul"])
def test_selection_is_a_table_of_rules_over_the_variants(module):
    """variant=None is the first row of the module's RULES that holds: each row names one of the
    backend's variants and says why, and the last row holds always (every input gets a variant)."""
    import importlib

    from kernel_common.catalog import always
    m = importlib.import_module(module)
    assert m.RULES[-1].when is always
    assert all(r.variant in m.VARIANTS and r.why for r in m.RULES)


@pytest.mark.parametrize("dtype,layout,shape", [(torch.float32, "row", (1000, 1000, 1000)),
                                                (torch.float32, "wt", (3, 5120, 1280)),
                                                (torch.bfloat16, "wt", (128, 4096, 4096)),
                                                (torch.float16, "row", (333, 4096, 14336)),
                                                (torch.int8, "row", (64, 64, 64)), (torch.int32, "wt", (7, 9, 5))])
def test_cuda_describe_names_the_variant_and_the_instance_it_launches(dtype, layout, shape):
    """cuda_ref.describe plans nothing and says what a call runs: the variant pick names, then an
    instance its sources compile and the grid; forced variants likewise."""
    M, N, K = shape
    a = torch.empty((M, K), dtype=dtype, device="meta")
    b = torch.empty((K, N), dtype=dtype, device="meta") if layout == "row" else \
        torch.empty((N, K), dtype=dtype, device="meta").t()
    compiled = {n for names_ in cuda_ref.sources("matmul").values() for n in names_}
    takes = [r.name for r in CUDA if r.algorithm == "matmul"
             and dtype in torch_dtypes(r, ("float32", "float16", "bfloat16", "int32", "int8"))]
    for variant in (None, *takes):
        words = cuda_ref.describe("matmul", a, b, variant=variant).split(" ")
        assert words[0] == (variant or cuda_ref.pick("matmul", a, b)), words
        instance = " ".join(words[1:words.index("grid")])
        assert instance in compiled, (variant, instance)


def test_readme_counts_the_variants():
    """The README's opening counts each algorithm's variants as the catalogs hold them."""
    import re
    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    for alg, words in (("transpose", "matrix transpose"), ("gemv", "matrix-vector multiplication"),
                       ("matmul", "matrix multiplication")):
        m = re.search(r"\*\*" + re.escape(words) + r"\*\* \((\d+) CUDA variants, (\d+) Triton variants", text)
        assert m, words
        assert (int(m[1]), int(m[2])) == (len(cuda_ref.variants(alg)), len(triton_impl.variants(alg))), alg
