"""Writes the tile IR bodies of tests/lit/*.tile from the kernels of
tests/python (run with the project's venv; each .tile file keeps its header
of RUN/CHECK lines, the body below the first line that does not start with
"//" is replaced). Locations are dropped so the files do not name paths."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import zetile  # noqa: E402
import attention_kernels as A  # noqa: E402
import xe_layout_kernels as L  # noqa: E402

ATTN_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
            "N_CTX": "i32", "stride_qm": "i32", "stride_kn": "i32", "stride_vn": "i32",
            "stride_om": "i32"}
DOT_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp32"}
TILES = {
    "xe_layouts_attention.tile": (A.attn_fwd_kernel, ATTN_SIG,
                                  {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}),
    "xe_layouts_attention_w32.tile": (A.attn_fwd_kernel, ATTN_SIG,
                                      {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}),
    "xe_layouts_matmul.tile": (L.dot_tile, DOT_SIG, {"BM": 64, "BN": 64, "BK": 32}),
    "xe_layouts_matmul_warps.tile": (L.dot_tile, DOT_SIG, {"BM": 256, "BN": 256, "BK": 32}),
    "xe_layouts_prologue.tile": (L.scaled_dot_tile, DOT_SIG, {"BM": 64, "BN": 64, "BK": 32}),
    "xe_layouts_cast.tile": (L.cast_dot_tile, {"A": "*fp16", "B": "*fp32", "C": "*fp32"},
                             {"BM": 64, "BN": 64, "BK": 32}),
    "xe_layouts_int8.tile": (L.dot_tile, {"A": "*i8", "B": "*i8", "C": "*i32"},
                             {"BM": 64, "BN": 64, "BK": 64}),
    "xe_layouts_softmax.tile": (L.row_softmax, {"X": "*fp32", "Y": "*fp32"}, {"M": 64, "N": 64}),
}

for name, (fn, sig, consts) in TILES.items():
    text = zetile.compile(fn, signature=sig, constexprs=consts, target="cpu", cached=False).asm["tile"]
    text = re.sub(r' loc\("[^)]*\)', "", text)
    path = os.path.join(HERE, name)
    header = []
    if os.path.exists(path):
        for line in open(path):
            if not line.startswith("//"):
                break
            header.append(line)
    with open(path, "w") as f:
        f.write("".join(header) + text)
    print("wrote", path)
