"""Triton's in-kernel tensor descriptor rule (issue 19, Triton's
test_tma_load/store_block_shape_err): a block's last dimension holds at
least 16 bytes; smaller ones are a CompilationError whose cause carries
Triton's wording."""
import pytest

import zetile
import zetile.language as tl

torch = pytest.importorskip("torch")


@zetile.jit
def desc_load(ptr, out, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(ptr, [16, 64], [64, 1], [2, BN])
    tl.store(out + tl.arange(0, 2)[:, None] * BN + tl.arange(0, BN)[None, :], desc.load([0, 0]))


@pytest.mark.parametrize("dtype,bn,ok", [(torch.int32, 2, False), (torch.int32, 4, True),
                                         (torch.int16, 4, False), (torch.int16, 8, True),
                                         (torch.uint8, 8, False), (torch.uint8, 16, True)])
def test_last_block_dim_needs_16_bytes(dtype, bn, ok):
    x = torch.arange(16 * 64).reshape(16, 64).to(dtype)
    out = torch.zeros(2 * bn, dtype=dtype)
    if ok:
        desc_load[(1,)](x, out, BN=bn)
        assert torch.equal(out.reshape(2, bn), x[:2, :bn])
        return
    with pytest.raises(zetile.CompilationError) as e:
        desc_load[(1,)](x, out, BN=bn)
    size = x.element_size()
    assert ("Descriptor block shape must have at least 16 bytes in the last dimension, "
            f"but got {bn} * {size} = {bn * size} bytes") in str(e.value.__cause__)
