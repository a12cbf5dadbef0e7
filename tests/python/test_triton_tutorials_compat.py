"""Triton tutorials 03a/06/07 in their own style on the CPU target (issue
19): what each needs from zetile beyond the import swap is checked with
kernels written here; when TRITON_SRC points at a Triton source tree, its
tutorial 06 test and tutorial 07 kernel also run from there through the
import alias of scripts/triton_suite (nothing of Triton's is stored here)."""
import os
import subprocess
import sys

import pytest
import torch

import zetile as triton
import zetile.language as tl
from zetile.language.extra import libdevice

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRITON_SRC = os.environ.get("TRITON_SRC")


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


# ------------------------------------------------------------ 07: libdevice
@triton.jit
def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x = libdevice.asin(x)
    tl.store(y_ptr + offsets, x, mask=mask)


def test_07_libdevice_asin():
    torch.manual_seed(0)
    size = 98432
    x = torch.rand(size)
    out = torch.zeros(size)
    grid = lambda meta: (triton.cdiv(size, meta["BLOCK_SIZE"]), )  # noqa: E731
    asin_kernel[grid](x, out, size, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, torch.asin(x), rtol=2e-6, atol=2e-7)
    assert tl.extra.libdevice is libdevice
    from zetile.language.extra.intel import libdevice as intel_libdevice
    assert intel_libdevice.asin is libdevice.asin


@pytest.mark.parametrize("name", ["acos", "atan", "tan", "sinh", "cosh", "tanh", "asinh", "acosh",
                                  "atanh", "log1p", "expm1", "log10", "exp10", "cbrt", "trunc",
                                  "rint", "round"])
def test_libdevice_functions_fp64(name, tmp_path):
    src = (f"import zetile as triton\nimport zetile.language as tl\n"
           f"from zetile.language.extra import libdevice\n\n\n@triton.jit\n"
           f"def k(x_ptr, y_ptr, N: tl.constexpr):\n    o = tl.arange(0, N)\n"
           f"    tl.store(y_ptr + o, libdevice.{name}(tl.load(x_ptr + o)))\n")
    p = tmp_path / f"ld_{name}.py"
    p.write_text(src)
    sys.path.insert(0, str(tmp_path))
    try:
        k = __import__(f"ld_{name}").k
    finally:
        sys.path.remove(str(tmp_path))
    x = torch.tensor([-2.5, -1.5, -0.7, -0.5, -1e-8, 0.0, 1e-8, 0.3, 0.5, 0.99, 1.5, 2.5, 3.0,
                      10.0, 0.75, 0.125], dtype=torch.float64)
    if name == "acosh":
        x = x.abs() + 1
    y = torch.empty_like(x)
    k[(1,)](x, y, 16)
    ref = {"rint": torch.round, "exp10": lambda t: torch.pow(10.0, t),
           "round": lambda t: torch.sign(t) * torch.floor(t.abs() + 0.5),
           "cbrt": lambda t: torch.sign(t) * t.abs() ** (1 / 3)}.get(name) or getattr(torch, name)
    torch.testing.assert_close(y, ref(x), rtol=1e-12, atol=0, equal_nan=True)


# ------------------------------------------------------------ 03a: ptr.type.element_ty
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.type.element_ty)   # the output's element type, from the pointer argument
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@pytest.mark.parametrize("out_dtype", [torch.float16, torch.float32])
def test_03a_output_type_from_pointer(out_dtype):
    torch.manual_seed(0)
    M, N, K = 70, 50, 40
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=out_dtype)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)
    torch.testing.assert_close(c.float(), (a.float() @ b.float()), rtol=2e-3, atol=2e-2)


# ------------------------------------------------------------ 06: descriptors and a helper returning a tuple
@triton.jit
def _maybe_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@triton.jit
def _attn_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, N_CTX: tl.constexpr, qk_scale,
                BLOCK_N: tl.constexpr):
    for start_n in range(0, N_CTX, BLOCK_N):
        k = desc_k.load([offset_y + start_n, 0]).T
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_y + start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(sm_scale, Out, desc_q, desc_k, desc_v, H, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    y_dim = H * N_CTX
    desc_q = _maybe_desc(desc_q, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    desc_k = _maybe_desc(desc_k, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_v = _maybe_desc(desc_v, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    offset_y = off_hz * N_CTX
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([offset_y + start_m * BLOCK_M, 0])
    acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, N_CTX, qk_scale, BLOCK_N)
    acc = acc / l_i[:, None]
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    o_ptrs = Out + (offset_y + offs_m)[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty))


def test_06_attention_descriptors_and_tuple_returning_helper():
    from zetile.tools.tensor_descriptor import TensorDescriptor
    torch.manual_seed(20)
    H, N_CTX, D, BM, BN = 2, 64, 32, 32, 16
    q, k, v = (torch.randn(H, N_CTX, D, dtype=torch.float16) * 0.5 for _ in range(3))
    ref = torch.softmax((q.float() @ k.float().transpose(1, 2)) * 0.5, -1) @ v.float()
    flat = [t.reshape(H * N_CTX, D) for t in (q, k, v)]
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    for host_descriptors in (False, True):
        out = torch.empty(H, N_CTX, D, dtype=torch.float16)
        if host_descriptors:
            args = [TensorDescriptor(t, t.shape, t.stride(), [bs, D]) for t, bs in zip(flat, (BM, BN, BN))]
        else:
            args = flat
        _attn_fwd[(N_CTX // BM, H)](0.5, out, *args, H, N_CTX, D, BM, BN)
        torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=0)


# ------------------------------------------------------------ from Triton's tree
def _alias_env():
    env = dict(os.environ, ZETILE_DEVICE="cpu")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "scripts", "triton_suite"),
                                         os.path.join(ROOT, "python-bindings")])
    return env


@pytest.mark.skipif(not TRITON_SRC, reason="TRITON_SRC (a Triton source tree) is not set")
def test_06_from_triton_tree():
    """Tutorial 06's own test (backward mode, which runs the forward too) on
    its smallest shape, imports resolved to zetile."""
    tut = os.path.join(TRITON_SRC, "python", "tutorials")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                        "zt_triton_alias", "06-fused-attention.py::test_op[triton-fp16-bwd-False-False-64-128-2-1]"],
                       cwd=tut, env=_alias_env(), capture_output=True, text=True, timeout=3000)
    assert r.returncode == 0, r.stdout[-3000:]
