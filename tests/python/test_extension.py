"""Tests of the C extension zetile._zetile on its own (no front end).

Builder, errors, artifacts and buffers need only libzetile. Compiling and
launching need libzetile_compiler: those tests skip, saying why, when
compiler_available() is false.
"""
import threading

import numpy as np
import pytest

z = pytest.importorskip(
    "zetile._zetile",
    reason="zetile._zetile is not built: ninja -C build _zetile copies it "
           "into python-bindings/zetile/")

BLOCK = 1024


def vector_add_ir(block=BLOCK, file="add.py"):
    """out[i] = x[i] + y[i] for i < n, one program per block."""
    b = z.Builder()
    b.set_loc(file, 3, 1)
    x, y, out, n = b.begin_kernel(
        "add_kernel",
        [(z.PTR, z.F32, ()), (z.PTR, z.F32, ()), (z.PTR, z.F32, ()), z.I32],
        divisibility=[16, 16, 16, None])
    pid = b.program_id(0)
    base = b.binary(z.BINARY_MULI, pid, b.const_int(z.I32, block))
    offs = b.binary(z.BINARY_ADDI, b.splat(base, [block]), b.make_range(0, block))
    mask = b.cmp(z.CMP_SLT, offs, b.splat(n, [block]))
    xv = b.load(b.addptr(b.splat(x, [block]), offs), mask)
    yv = b.load(b.addptr(b.splat(y, [block]), offs), mask=mask, other=None)
    b.set_loc(file, 4, 5)
    s = b.binary(z.BINARY_ADDF, xv, yv)
    b.store(b.addptr(b.splat(out, [block]), offs), s, mask)
    b.end_kernel()
    return b


def require_compiler():
    ok, why = z.compiler_available()
    if not ok:
        pytest.skip(f"libzetile_compiler is not available: {why}")


# --- constants and errors ----------------------------------------------------

def test_constants_follow_the_headers():
    assert z.SCALAR_KINDS["I32"] == z.I32
    assert z.SCALAR_KINDS["PTR"] == z.PTR == len(z.SCALAR_KINDS) - 1
    assert z.BINARY_OPS["ADDF"] == z.BINARY_ADDF == 0
    assert z.UNARY_OPS["EXP"] == z.UNARY_EXP
    assert z.CMP_PREDICATES["SLT"] == z.CMP_SLT
    assert z.CAST_OPS["EXTSI"] == z.CAST_EXTSI
    assert z.REDUCE_KINDS["XOR"] == z.REDUCE_XOR == len(z.REDUCE_KINDS) - 1
    assert z.SCALAR_KIND_BITS[z.BF16] == 16 and z.SCALAR_KIND_BITS[z.PTR] == 64
    assert z.SCALAR_KIND_SPELLINGS[z.F32] == "f32"
    assert z.NO_VALUE == -1 and z.MAX_RANK == 10
    assert z.__version__.count(".") == 2


def test_one_exception_class_per_status_code():
    expected = {
        "INVALID_ARGUMENT": "InvalidArgumentError", "NOT_FOUND": "NotFoundError",
        "UNSUPPORTED": "UnsupportedError", "COMPILE_ERROR": "CompileError",
        "DRIVER_ERROR": "DriverError", "OUT_OF_MEMORY": "OutOfMemoryError",
        "IO_ERROR": "IOFailure", "UNAVAILABLE": "UnavailableError",
        "INTERNAL": "InternalError", "DEVICE_ASSERT": "DeviceAssertError",
        "DEVICE_FAULT": "DeviceFaultError", "LAUNCH_INTERRUPTED": "LaunchInterruptedError",
        "DEVICE_LOST": "DeviceLostError",
    }
    assert set(z.STATUS_CODES) == set(expected)
    assert issubclass(z.Error, Exception)
    for code_name, cls_name in expected.items():
        cls = getattr(z, cls_name)
        assert issubclass(cls, z.Error)
        assert cls.code == z.STATUS_CODES[code_name]
        assert cls.__module__ == "zetile._zetile"
    assert z.Error.code is None
    assert z.IOFailure is not IOError


# --- builder -----------------------------------------------------------------

def test_builder_vector_add_round_trip():
    text = vector_add_ir().module_text()
    assert "func.func @add_kernel" in text or "@add_kernel" in text
    for op in ('"tile.load"', '"tile.store"', '"tile.addptr"', '"tile.splat"',
               "arith.addf", 'loc("add.py":3:1)', 'loc("add.py":4:5)'):
        assert op in text, op


def test_value_types_are_tuples():
    b = z.Builder()
    p, n = b.begin_kernel("k", [(z.PTR, z.F16), z.I64])
    assert b.value_type(p) == (z.PTR, z.F16, ())
    assert b.value_type(n)[0] == z.I64 and b.value_type(n)[2] == ()
    r = b.make_range(0, 16)
    assert b.value_type(r)[::2] == (z.I32, (16,))
    t = b.expand_dims(r, 0)
    assert b.value_type(t)[2] == (1, 16)
    t = b.broadcast(t, (8, 16))
    assert b.value_type(b.trans(t, [1, 0]))[2] == (16, 8)
    assert b.value_type(b.reshape(t, [128]))[2] == (128,)
    f = b.cast(z.CAST_SITOFP, t, z.F32)
    assert b.value_type(f)[0] == z.F32
    assert b.value_type(b.reduce(z.REDUCE_MAX, f, 1))[2] == (8,)
    acc = b.splat(b.const_float(z.F32, 0.0), [8, 8])
    assert b.value_type(b.dot(f, b.trans(f, (1, 0)), acc))[2] == (8, 8)
    pi = b.ptr_to_int(p)
    assert b.value_type(b.int_to_ptr(pi, z.F32)) == (z.PTR, z.F32, ())
    assert b.value_type(b.ptr_cast(p, z.I8)) == (z.PTR, z.I8, ())
    one = b.const_float(z.F32, 1.0)
    assert b.value_type(b.fma(one, one, b.unary(z.UNARY_EXP, one)))[0] == z.F32
    c = b.cmp(z.CMP_OLT, one, one)
    assert b.value_type(b.select(c, one, one))[0] == z.F32
    assert b.value_type(b.num_programs(0))[0] == z.I32
    b.end_kernel()


def test_type_error_raises_with_location():
    b = z.Builder()
    b.begin_kernel("k", [(z.PTR, z.F32, ())])
    b.set_loc("bad.py", 7, 9)
    i = b.const_int(z.I32, 1)
    f = b.const_float(z.F32, 1.0)
    with pytest.raises(z.InvalidArgumentError) as info:
        b.binary(z.BINARY_ADDF, i, f)
    assert "bad.py:7:9" in str(info.value)
    assert info.value.code == z.STATUS_CODES["INVALID_ARGUMENT"]
    assert isinstance(info.value, z.Error)
    with pytest.raises(z.InvalidArgumentError, match="not open|invalid value"):
        b.unary(z.UNARY_EXP, 12345)


def test_module_text_before_end_kernel_raises():
    b = z.Builder()
    with pytest.raises(z.Error):
        b.module_text()


def test_control_flow_and_user_reductions():
    b = z.Builder()
    out, n = b.begin_kernel("k", [(z.PTR, z.F32, ()), z.I32])
    zero, one = b.const_int(z.I32, 0), b.const_int(z.I32, 1)
    acc0 = b.splat(b.const_float(z.F32, 0.5), [4, 16])
    iv, (acc,) = b.for_begin(zero, n, one, [acc0])
    assert b.value_type(iv)[0] == z.I32
    (res,) = b.for_end([b.unary(z.UNARY_EXP, acc)])
    # A user combiner: (lhs, rhs) -> lhs + rhs.
    lhs, rhs = b.reduce_begin([res], 1)
    (red,) = b.reduce_end([b.binary(z.BINARY_ADDF, lhs, rhs)])
    assert b.value_type(red)[2] == (4,)
    total = b.reduce(z.REDUCE_ADD, red, 0)
    cond = b.cmp(z.CMP_EQ, b.program_id(0), zero)
    b.if_begin(cond)
    sq = b.binary(z.BINARY_MULF, total, total)
    b.if_else()
    (picked,) = b.if_end([sq], [total])
    # while i < n: i += 1
    (i,) = b.while_begin([zero])
    (j,) = b.while_cond(b.cmp(z.CMP_SLT, i, n))
    (count,) = b.while_end([b.binary(z.BINARY_ADDI, j, one)])
    assert b.value_type(count)[0] == z.I32
    b.if_begin(cond)
    b.if_end()
    assert b.for_begin(zero, n, one) [1] == []
    assert b.for_end() == []
    b.store(out, picked)
    b.end_kernel()
    text = b.module_text()
    for op in ("scf.for", "scf.if", "scf.while", "scf.condition", '"tile.reduce"'):
        assert op in text, op


def test_argument_conversion_errors():
    b = z.Builder()
    (p,) = b.begin_kernel("k", [(z.PTR, z.F32, ())])
    r = b.make_range(0, 4)
    with pytest.raises(ValueError, match="binary op"):
        b.binary(999, r, r)
    with pytest.raises(TypeError, match="lhs must be an int"):
        b.binary(z.BINARY_ADDI, "r", r)
    with pytest.raises(ValueError, match="rank 11"):
        b.splat(p, [1] * (z.MAX_RANK + 1))
    with pytest.raises(ValueError, match="order has 2 entries"):
        b.trans(r, [1, 0])
    with pytest.raises(ValueError, match="then region yields 1 values, else region 0"):
        b.if_end([r], [])
    with pytest.raises(TypeError):
        b.begin_kernel("k2", [("f32",)])
    with pytest.raises(ValueError, match="divisibility has 1 entries"):
        z.Builder().begin_kernel("k", [z.I32, z.I32], [4])
    with pytest.raises(TypeError, match="takes no arguments"):
        z.Builder(1)


# --- artifacts, hashing, cache keys -------------------------------------------

def test_artifact_sections_and_serialization():
    a = z.Artifact()
    assert a.sections() == {} and a.meta is None and a.cache_hit is None
    a.set("tile", "module {}".encode())
    a.set("meta", bytearray(b"kernel=k\n"))
    a.set("blob", np.arange(4, dtype=np.uint8))
    assert a.get("blob") == bytes([0, 1, 2, 3])
    assert a.meta == "kernel=k\n"
    with pytest.raises(z.NotFoundError):
        a.get("spirv")
    blob = a.serialize()
    b = z.Artifact.deserialize(blob)
    assert b.sections() == a.sections()
    with pytest.raises(z.Error):
        z.Artifact.deserialize(blob[:-3] + b"xyz")
    assert "tile" in repr(b)


def test_hash_and_cache_key():
    assert z.hash_hex(b"abc") == z.hash_hex(bytearray(b"abc"))
    assert len(z.hash_hex(b"")) == 32
    text = vector_add_ir().module_text()
    k1 = z.compile_cache_key(text)
    assert len(k1) == 32 and int(k1, 16) >= 0
    assert k1 == z.compile_cache_key(text, target="cpu")
    assert k1 != z.compile_cache_key(text, target="pvc")
    assert z.compile_cache_key(text, "pvc", 8) != z.compile_cache_key(text, "pvc", 4)
    assert z.compile_cache_key(text, "pvc", None) == z.compile_cache_key(text, "pvc", 0)
    assert z.compile_cache_key(text, None) == k1
    with pytest.raises(ValueError, match="num_warps"):
        z.compile_cache_key(text, "pvc", -1)
    stats = z.cache_stats()
    assert set(stats) >= {"hits", "misses", "writes", "compiles"}
    assert isinstance(z.cache_dir(), str)
    assert isinstance(z.compiler_version(), str)
    ok, why = z.compiler_available()
    assert isinstance(ok, bool) and (ok or why)


# --- devices and buffers -------------------------------------------------------

def test_devices_list_the_cpu():
    devs = z.devices()
    cpu = [d for d in devs if d["name"] == "cpu"]
    assert cpu and cpu[0]["host_memory"] and cpu[0]["target"] == "cpu"
    dev = z.Device("cpu")
    assert dev.info["name"] == dev.name == "cpu"
    assert "cpu" in repr(dev)
    dev.synchronize()
    with pytest.raises(z.Error):
        z.Device("no_such_backend:7")


def test_buffer_write_read():
    dev = z.Device("cpu")
    buf = dev.alloc(64)
    assert buf.size == 64 and buf.address != 0 and buf.device is dev
    data = np.arange(16, dtype=np.float32)
    buf.write(data)
    assert buf.read() == data.tobytes()
    assert buf.read(8, offset=4) == data.tobytes()[4:12]
    buf.write(b"\xff" * 4, offset=60)
    out = np.empty(16, dtype=np.float32)
    buf.read_into(out)
    np.testing.assert_array_equal(out[:15], data[:15])
    ba = bytearray(4)
    buf.read_into(ba, offset=60)
    assert ba == b"\xff" * 4
    # Strided sources are copied; strided destinations are refused.
    buf.write(np.arange(32, dtype=np.float32)[::2])
    assert np.frombuffer(buf.read(), np.float32)[1] == 2.0
    with pytest.raises(TypeError, match="writable"):
        buf.read_into(np.empty(32, np.float32)[::2])
    with pytest.raises(TypeError, match="writable"):
        buf.read_into(b"immutable")
    with pytest.raises(ValueError, match="do not fit"):
        buf.write(b"x" * 65)
    with pytest.raises(ValueError, match="do not fit"):
        buf.read(8, offset=60)
    buf.release()
    with pytest.raises(ValueError, match="released"):
        buf.read()
    assert "released" in repr(buf)
    with pytest.raises(TypeError):
        z.Buffer()


# --- compile and launch (need libzetile_compiler) -----------------------------

def test_compile_artifact_sections():
    require_compiler()
    text = vector_add_ir().module_text()
    art = z.compile(text, target="cpu", cached=False)
    assert art.cache_hit is None
    sections = art.sections()
    assert sections["tile"].decode() == text
    assert "llvm" in sections
    assert "kernel=add_kernel" in art.meta
    cached = z.compile(text)
    assert cached.cache_hit in (True, False)
    assert z.compile(text).cache_hit is True


def test_compile_error_is_raised():
    require_compiler()
    with pytest.raises(z.CompileError):
        z.compile("this is not MLIR", cached=False)


def test_vector_add_launch_on_cpu():
    require_compiler()
    n = 3000
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    dev = z.Device("cpu")
    exe = dev.load(z.compile(vector_add_ir().module_text(), target="cpu"))
    assert exe.device is dev
    bx, by, bo = dev.alloc(x.nbytes), dev.alloc(y.nbytes), dev.alloc(x.nbytes)
    bx.write(x)
    by.write(y)
    grid = ((n + BLOCK - 1) // BLOCK,)
    exe.launch(grid, [(z.PTR, bx), (z.PTR, by.address), (z.PTR, bo), (z.I32, n)])
    dev.synchronize()
    out = np.empty_like(x)
    bo.read_into(out)
    np.testing.assert_array_equal(out, x + y)
    stats = exe.stats()
    assert set(stats) == {"spill_bytes", "private_bytes", "local_bytes",
                          "max_subgroup_size", "num_grf"}
    with pytest.raises(z.InvalidArgumentError):
        exe.launch(grid, [(z.PTR, bx)])
    with pytest.raises(ValueError, match="grid"):
        exe.launch((1, 1, 1, 1), [])
    with pytest.raises(TypeError, match="args\\[3\\]"):
        exe.launch(grid, [(z.PTR, bx), (z.PTR, by), (z.PTR, bo), (z.I32, "n")])


def test_launches_from_threads():
    """The GIL is released around launches: threads share one executable."""
    require_compiler()
    dev = z.Device("cpu")
    exe = dev.load(z.compile(vector_add_ir().module_text(), target="cpu"))
    n = BLOCK
    errors = []

    def work(seed):
        try:
            x = np.full(n, seed, np.float32)
            bx, bo = dev.alloc(x.nbytes), dev.alloc(x.nbytes)
            bx.write(x)
            for _ in range(5):
                exe.launch((1,), [(z.PTR, bx), (z.PTR, bx), (z.PTR, bo), (z.I32, n)])
            dev.synchronize()
            assert np.frombuffer(bo.read(), np.float32).tolist() == [2 * seed] * n
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
