"""`triton.knobs` for programs ported to zetile.

Triton groups its settings in knob sets (`knobs.runtime`, `knobs.cache`,
...), each knob read from an environment variable unless set in Python, and
each set has `scope()` (restores the set on exit), `copy()` and `reset()`.
The same names and mechanics are here, so code that sets them (Triton's
tests, its `fresh_knobs` fixture) runs. What each knob does in zetile:

- `runtime.jit_cache_hook` / `runtime.jit_post_compile_hook`: called as in
  Triton, before and after a kernel specialization is compiled, with
  `key`, `repr`, `fn`, `compile` (whose `specialization_data` string
  `JITFunction.preload` accepts), `is_manual_warmup`, `already_compiled`.
  A true result of `jit_cache_hook` skips the compile (`warmup` then
  returns None), as in Triton.
- `runtime.override_arch`: Triton compiles for another GPU architecture.
  zetile picks its target from the device (`ZETILE_DEVICE`,
  `zetile.set_device`), so a set value is refused when a kernel compiles
  instead of being ignored.
- `runtime.debug` (TRITON_DEBUG): as in Triton, kernels without their own
  `debug=` compile `device_assert` in; it is read when a kernel compiles
  and setting it drops the launches already cached.
- `language.default_fp_fusion` / `language.force_disable_fp_fusion`: Triton
  lets its backend fuse a multiply and an add into one FMA unless fusion is
  disabled. zetile never fuses them (each `a * b + c` rounds twice on every
  target), which is Triton's disabled result; with fusion allowed Triton
  may or may not fuse, so both settings agree with zetile's results.
- `compilation.disable_line_info`, `compilation.instrumentation_mode`,
  `cache.*`, `autotuning.*`, `build`, `nvidia`, `amd`, `proton`, `redis` and
  the rest are kept as plain settings: they name Triton's CUDA/HIP tools,
  its cache layout or debug output, none of which changes what a zetile
  kernel computes.
"""
import contextlib
import copy as _copy
import os

propagate_env = True


class env_base:
    """A knob read from environment variable `key` (with `default`) unless a
    value was set in Python; setting it also sets the variable when
    `propagate_env` is true, as Triton's knobs do."""

    def __init__(self, key, default=None):
        self.key = key
        self.default = default

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objclass=None):
        if obj is None:
            return self
        if self.name in obj.__dict__:
            return obj.__dict__[self.name]
        raw = os.environ.get(self.key)
        return self.default if raw is None else self.convert(raw)

    def __set__(self, obj, value):
        obj.__dict__[self.name] = value
        if propagate_env and value is not None and self.key:
            os.environ[self.key] = self.to_env(value)

    def __delete__(self, obj):
        obj.__dict__.pop(self.name, None)

    def convert(self, raw):
        return raw

    def to_env(self, value):
        return str(value)


class env_str(env_base):
    pass


class env_opt_str(env_base):
    pass


class env_bool(env_base):
    def __init__(self, key, default=False):
        super().__init__(key, default)

    def convert(self, raw):
        return raw.strip().lower() in ("1", "true", "on", "yes")

    def to_env(self, value):
        return "1" if value else "0"


class env_opt_bool(env_bool):
    def __init__(self, key):
        env_base.__init__(self, key, None)


class env_int(env_base):
    def convert(self, raw):
        return int(raw)


class HookChain:
    """Triton's chain of launch hooks: `add`, `remove`, called in order."""

    def __init__(self, reversed=False):
        self.calls = []
        self.reversed = reversed

    def add(self, fn):
        if fn not in self.calls:
            self.calls.append(fn)

    def remove(self, fn):
        if fn in self.calls:
            self.calls.remove(fn)

    def __bool__(self):
        return bool(self.calls)

    def __call__(self, *args, **kwargs):
        for fn in (self.calls[::-1] if self.reversed else self.calls):
            fn(*args, **kwargs)


class base_knobs:
    @property
    def knob_descriptors(self):
        out = {}
        for cls in reversed(type(self).__mro__):
            for k, v in vars(cls).items():
                if isinstance(v, env_base):
                    out[k] = v
        return out

    @property
    def knobs(self):
        return {k: getattr(self, k) for k in self.knob_descriptors}

    def copy(self):
        res = object.__new__(type(self))
        res.__dict__.update(_copy.copy(self.__dict__))
        return res

    def reset(self):
        """Forgets values set in Python: knobs read their variables again,
        the other settings (hooks) take their defaults."""
        for k in self.knob_descriptors:
            self.__dict__.pop(k, None)
        self.__dict__.update(type(self)().__dict__)
        if isinstance(self, runtime_knobs):
            _debug_changed()
        return self

    @contextlib.contextmanager
    def scope(self):
        saved = _copy.copy(self.__dict__)
        env = {d.key: os.environ.get(d.key) for d in self.knob_descriptors.values() if d.key}
        try:
            yield
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            if isinstance(self, runtime_knobs):
                _debug_changed()  # runtime.debug may have changed back


class build_knobs(base_knobs):
    cc = env_opt_str("CC")

    def __init__(self):
        self.impl = None


class redis_knobs(base_knobs):
    key_format = env_str("TRITON_REDIS_KEY_FORMAT", "triton:{key}:{filename}")
    host = env_str("TRITON_REDIS_HOST", "localhost")
    port = env_int("TRITON_REDIS_PORT", 6379)


class cache_knobs(base_knobs):
    home_dir = env_str("TRITON_HOME", os.path.expanduser("~/"))
    dir = env_opt_str("TRITON_CACHE_DIR")
    dump_dir = env_opt_str("TRITON_DUMP_DIR")
    override_dir = env_opt_str("TRITON_OVERRIDE_DIR")

    def __init__(self):
        self.manager_class = None
        self.remote_manager_class = None


class compilation_knobs(base_knobs):
    override = env_bool("TRITON_KERNEL_OVERRIDE")
    dump_ir = env_bool("TRITON_KERNEL_DUMP")
    store_binary_only = env_bool("TRITON_STORE_BINARY_ONLY")
    always_compile = env_bool("TRITON_ALWAYS_COMPILE")
    use_ir_loc = env_opt_str("USE_IR_LOC")
    enable_asan = env_bool("TRITON_ENABLE_ASAN")
    disable_line_info = env_bool("TRITON_DISABLE_LINE_INFO")
    front_end_debugging = env_bool("TRITON_FRONT_END_DEBUGGING")
    allow_non_constexpr_globals = env_bool("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS")
    instrumentation_mode = env_str("TRITON_INSTRUMENTATION_MODE", "")

    def __init__(self):
        self.listener = None


class autotuning_knobs(base_knobs):
    cache = env_bool("TRITON_CACHE_AUTOTUNING")
    print = env_bool("TRITON_PRINT_AUTOTUNING")

    def __init__(self):
        self.listener = None


class _debug_knob(env_bool):
    """runtime.debug compiles device_assert in (kernels without their own
    debug=): a change reaches kernels already launched too, whose C fast
    launches are dropped so the next launch compiles again."""

    def __set__(self, obj, value):
        super().__set__(obj, value)
        _debug_changed()

    def __delete__(self, obj):
        super().__delete__(obj)
        _debug_changed()


def _debug_changed():
    import sys
    jit = sys.modules.get("zetile.jit")
    if jit is not None:
        jit._drop_fast_launches()


class runtime_knobs(base_knobs):
    interpret = env_bool("TRITON_INTERPRET")
    debug = _debug_knob("TRITON_DEBUG")
    override_arch = env_opt_str("TRITON_OVERRIDE_ARCH")

    def __init__(self):
        self.launch_enter_hook = HookChain()
        self.launch_exit_hook = HookChain(reversed=True)
        self.kernel_load_start_hook = HookChain()
        self.kernel_load_end_hook = HookChain(reversed=True)
        self.kernel_unload_hook = HookChain()
        self.jit_cache_hook = None
        self.jit_post_compile_hook = None
        self.add_stages_inspection_hook = None


class language_knobs(base_knobs):
    fp32_default = env_opt_str("TRITON_F32_DEFAULT")
    default_fp_fusion = env_bool("TRITON_DEFAULT_FP_FUSION", True)
    force_disable_fp_fusion = env_bool("TRITON_FORCE_DISABLE_FP_FUSION")


class nvidia_knobs(base_knobs):
    dump_nvptx = env_bool("NVPTX_ENABLE_DUMP")
    disable_ptxas_opt = env_bool("DISABLE_PTXAS_OPT")
    ptxas_options = env_opt_str("PTXAS_OPTIONS")
    libdevice_path = env_opt_str("TRITON_LIBDEVICE_PATH")
    libcuda_path = env_opt_str("TRITON_LIBCUDA_PATH")


class amd_knobs(base_knobs):
    use_buffer_ops = env_bool("AMDGCN_USE_BUFFER_OPS", True)
    use_buffer_atomics = env_bool("AMDGCN_USE_BUFFER_ATOMICS", True)
    dump_amdgcn = env_bool("AMDGCN_ENABLE_DUMP")
    libhip_path = env_opt_str("TRITON_LIBHIP_PATH")


class proton_knobs(base_knobs):
    disable = env_bool("TRITON_PROTON_DISABLE")


build = build_knobs()
redis = redis_knobs()
cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
runtime = runtime_knobs()
language = language_knobs()
nvidia = nvidia_knobs()
amd = amd_knobs()
proton = proton_knobs()


def unsupported_setting():
    """Checked before a kernel compiles: a knob that would change what Triton
    compiles and that zetile cannot honour is refused (this message), not
    ignored. None when every setting is usable."""
    arch = runtime.override_arch
    if arch:
        return (f"triton.knobs.runtime.override_arch={arch!r} (TRITON_OVERRIDE_ARCH) is not "
                "supported: zetile compiles for the current device's target (ZETILE_DEVICE or "
                "zetile.set_device); unset it")
    return None
