// The `tile` dialect: Triton-style tile programs on ranked tensors.
// Loaded at run time with mlirLoadIRDLDialects; `mlir-opt-22 --irdl-file=`
// reads it too. Ops here are only the ones upstream dialects lack: values are
// ranked tensors (or scalars), arithmetic is arith/math, control flow is scf.
// Shapes and element types are checked by the builder (jit/builder.c), which
// has the source locations; IRDL checks arity and the few fixed types.
// Semantics of every op: docs/TILE_IR.md.
irdl.dialect @tile {
  // Pointer to global memory holding elements of `pointee`.
  irdl.type @ptr {
    %0 = irdl.any
    irdl.parameters(pointee: %0)
  }

  irdl.operation @program_id {
    %i32 = irdl.is i32
    %a = irdl.any
    irdl.attributes { "axis" = %a }
    irdl.results(result: %i32)
  }
  irdl.operation @num_programs {
    %i32 = irdl.is i32
    %a = irdl.any
    irdl.attributes { "axis" = %a }
    irdl.results(result: %i32)
  }
  // [start, end) as a 1-D tensor of i32.
  irdl.operation @make_range {
    %a = irdl.any
    %b = irdl.any
    %r = irdl.any
    irdl.attributes { "start" = %a, "end" = %b }
    irdl.results(result: %r)
  }
  irdl.operation @splat {
    %s = irdl.any
    %r = irdl.any
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  // Size-1 dimensions of src repeated up to the result shape (same rank).
  irdl.operation @broadcast {
    %s = irdl.any
    %r = irdl.any
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  irdl.operation @expand_dims {
    %s = irdl.any
    %r = irdl.any
    %a = irdl.any
    irdl.attributes { "axis" = %a }
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  // Row-major reinterpretation with the same number of elements.
  irdl.operation @reshape {
    %s = irdl.any
    %r = irdl.any
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  // Permutes dimensions: result dim i is src dim order[i].
  irdl.operation @trans {
    %s = irdl.any
    %r = irdl.any
    %a = irdl.any
    irdl.attributes { "order" = %a }
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  // The value itself, with a fact the program states about it (Triton's
  // tl.multiple_of / max_contiguous / max_constancy): "hint" names the kind,
  // "values" gives one number per dimension. The compiler moves the fact
  // onto the value's producer as a zt.<hint> attribute and drops the op
  // before any lowering (lowering/common/hints.c).
  irdl.operation @hint {
    %s = irdl.any
    %r = irdl.any
    %h = irdl.any
    %v = irdl.any
    irdl.attributes { "hint" = %h, "values" = %v }
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  // ptr + offset * sizeof(pointee), elementwise.
  irdl.operation @addptr {
    %p = irdl.any
    %o = irdl.any
    irdl.operands(ptr: %p, offset: %o)
    irdl.results(result: %p)
  }
  irdl.operation @ptr_to_int {
    %p = irdl.any
    %r = irdl.any
    irdl.operands(ptr: %p)
    irdl.results(result: %r)
  }
  irdl.operation @int_to_ptr {
    %p = irdl.any
    %r = irdl.any
    irdl.operands(src: %p)
    irdl.results(result: %r)
  }
  irdl.operation @ptr_cast {
    %p = irdl.any
    %r = irdl.any
    irdl.operands(src: %p)
    irdl.results(result: %r)
  }
  // Masked-off lanes yield `other` (or an undefined value when absent).
  irdl.operation @load {
    %p = irdl.any
    %m = irdl.any
    %o = irdl.any
    %r = irdl.any
    irdl.operands(ptr: %p, mask: optional %m, other: optional %o)
    irdl.results(result: %r)
  }
  irdl.operation @store {
    %p = irdl.any
    %v = irdl.any
    %m = irdl.any
    irdl.operands(ptr: %p, value: %v, mask: optional %m)
  }
  // Reduces each operand along `axis` (a scalar result when the source is
  // 1-D) with `combiner`, a func.func symbol taking (lhs..., rhs...) scalars
  // and returning the combined scalars. IRDL ops cannot be terminators, so
  // the combiner is a function rather than a region. Up to 4 operands, each
  // its own optional slot: IRDL unifies the types of a variadic's operands.
  irdl.operation @reduce {
    %a = irdl.any
    %c = irdl.any
    %v0 = irdl.any
    %v1 = irdl.any
    %v2 = irdl.any
    %v3 = irdl.any
    %r0 = irdl.any
    %r1 = irdl.any
    %r2 = irdl.any
    %r3 = irdl.any
    irdl.attributes { "axis" = %a, "combiner" = %c }
    irdl.operands(src0: %v0, src1: optional %v1, src2: optional %v2, src3: optional %v3)
    irdl.results(res0: %r0, res1: optional %r1, res2: optional %r2, res3: optional %r3)
  }
  // acc + a @ b on the last two dimensions.
  irdl.operation @dot {
    %a = irdl.any
    %b = irdl.any
    %c = irdl.any
    %p = irdl.any
    irdl.attributes { "input_precision" = %p }
    irdl.operands(a: %a, b: %b, acc: %c)
    irdl.results(result: %c)
  }
  // A block of a strided view (docs/TILE_IR.md): operands are the base
  // pointer, then rank shape values (i64), rank strides (i64) and rank
  // offsets (i32); block_store appends the value.
  irdl.operation @block_load {
    %p = irdl.any
    %s = irdl.any
    %t = irdl.any
    %o = irdl.any
    %r = irdl.any
    %a = irdl.any
    %pad = irdl.any
    irdl.attributes { "boundary_check" = %a, "padding" = %pad }
    irdl.operands(base: %p, shape: variadic %s, strides: variadic %t, offsets: variadic %o)
    irdl.results(result: %r)
  }
  irdl.operation @block_store {
    %p = irdl.any
    %s = irdl.any
    %t = irdl.any
    %o = irdl.any
    %v = irdl.any
    %a = irdl.any
    irdl.attributes { "boundary_check" = %a }
    irdl.operands(base: %p, shape: variadic %s, strides: variadic %t, offsets: variadic %o, value: %v)
  }
  // Returns the old values; masked-off lanes do nothing.
  irdl.operation @atomic_rmw {
    %p = irdl.any
    %v = irdl.any
    %m = irdl.any
    %k = irdl.any
    %s = irdl.any
    %c = irdl.any
    irdl.attributes { "kind" = %k, "sem" = %s, "scope" = %c }
    irdl.operands(ptr: %p, value: %v, mask: optional %m)
    irdl.results(result: %v)
  }
  irdl.operation @atomic_cas {
    %p = irdl.any
    %v = irdl.any
    %s = irdl.any
    %c = irdl.any
    irdl.attributes { "sem" = %s, "scope" = %c }
    irdl.operands(ptr: %p, cmp: %v, value: %v)
    irdl.results(result: %v)
  }
  // Inclusive scan along axis with a combiner function (as tile.reduce).
  irdl.operation @scan {
    %a = irdl.any
    %c = irdl.any
    %rev = irdl.any
    %v0 = irdl.any
    %v1 = irdl.any
    %v2 = irdl.any
    %v3 = irdl.any
    %r0 = irdl.any
    %r1 = irdl.any
    %r2 = irdl.any
    %r3 = irdl.any
    irdl.attributes { "axis" = %a, "combiner" = %c, "reverse" = %rev }
    irdl.operands(src0: %v0, src1: optional %v1, src2: optional %v2, src3: optional %v3)
    irdl.results(res0: %r0, res1: optional %r1, res2: optional %r2, res3: optional %r3)
  }
  // One value (or none) per op: the builder writes one op per value.
  irdl.operation @print {
    %v = irdl.any
    %p = irdl.any
    %h = irdl.any
    irdl.attributes { "prefix" = %p, "hex" = %h }
    irdl.operands(value: optional %v)
  }
  irdl.operation @assert {
    %v = irdl.any
    %m = irdl.any
    irdl.attributes { "message" = %m }
    irdl.operands(cond: %v)
  }
}
