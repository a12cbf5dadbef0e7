module {
  func.func private @zt_combine_0(%v12: f32, %v13: f32) -> (f32) {
    %v14 = arith.maxnumf %v12, %v13 : f32 loc("/tmp/rel/mkcorpus.py":15:35)
    return %v14 : f32
  }
  func.func private @zt_combine_1(%v22: f32, %v23: f32) -> (f32) {
    %v24 = arith.addf %v22, %v23 : f32 loc("/tmp/rel/mkcorpus.py":16:47)
    return %v24 : f32
  }
  func.func @softmax_row(%v0: !tile.ptr<f16>, %v1: !tile.ptr<f16>, %v2: i32) attributes {zt.kernel, zt.divisibility = array<i32: 16, 16, 0>} {
    %v3 = "tile.make_range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32> loc("/tmp/rel/mkcorpus.py":12:25)
    %v4 = "tile.splat"(%v2) : (i32) -> tensor<32xi32> loc("/tmp/rel/mkcorpus.py":13:16)
    %v5 = arith.cmpi slt, %v3, %v4 : tensor<32xi32> loc("/tmp/rel/mkcorpus.py":13:16)
    %v6 = "tile.splat"(%v0) : (!tile.ptr<f16>) -> tensor<32x!tile.ptr<f16>> loc("/tmp/rel/mkcorpus.py":14:25)
    %v7 = "tile.addptr"(%v6, %v3) : (tensor<32x!tile.ptr<f16>>, tensor<32xi32>) -> tensor<32x!tile.ptr<f16>> loc("/tmp/rel/mkcorpus.py":14:25)
    %v8 = arith.constant 0xFC00 : f16 loc("/tmp/rel/mkcorpus.py":14:52)
    %v9 = "tile.splat"(%v8) : (f16) -> tensor<32xf16> loc("/tmp/rel/mkcorpus.py":14:52)
    %v10 = "tile.load"(%v7, %v5, %v9) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<32x!tile.ptr<f16>>, tensor<32xi1>, tensor<32xf16>) -> tensor<32xf16> loc("/tmp/rel/mkcorpus.py":14:52)
    %v11 = arith.extf %v10 : tensor<32xf16> to tensor<32xf32> loc("/tmp/rel/mkcorpus.py":15:35)
    %v15 = "tile.reduce"(%v11) {axis = 0 : i32, combiner = @zt_combine_0, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<32xf32>) -> (f32) loc("/tmp/rel/mkcorpus.py":15:35)
    %v16 = arith.extf %v10 : tensor<32xf16> to tensor<32xf32> loc("/tmp/rel/mkcorpus.py":15:35)
    %v17 = "tile.splat"(%v15) : (f32) -> tensor<32xf32> loc("/tmp/rel/mkcorpus.py":15:35)
    %v18 = arith.subf %v16, %v17 : tensor<32xf32> loc("/tmp/rel/mkcorpus.py":15:35)
    %v19 = math.exp %v18 : tensor<32xf32> loc("/tmp/rel/mkcorpus.py":15:35)
    %v20 = "tile.splat"(%v1) : (!tile.ptr<f16>) -> tensor<32x!tile.ptr<f16>> loc("/tmp/rel/mkcorpus.py":16:22)
    %v21 = "tile.addptr"(%v20, %v3) : (tensor<32x!tile.ptr<f16>>, tensor<32xi32>) -> tensor<32x!tile.ptr<f16>> loc("/tmp/rel/mkcorpus.py":16:22)
    %v25 = "tile.reduce"(%v19) {axis = 0 : i32, combiner = @zt_combine_1, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<32xf32>) -> (f32) loc("/tmp/rel/mkcorpus.py":16:47)
    %v26 = "tile.splat"(%v25) : (f32) -> tensor<32xf32> loc("/tmp/rel/mkcorpus.py":16:47)
    %v27 = arith.divf %v19, %v26 : tensor<32xf32> loc("/tmp/rel/mkcorpus.py":16:47)
    %v28 = arith.truncf %v27 : tensor<32xf32> to tensor<32xf16> loc("/tmp/rel/mkcorpus.py":16:56)
    "tile.store"(%v21, %v28, %v5) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<32x!tile.ptr<f16>>, tensor<32xf16>, tensor<32xi1>) -> () loc("/tmp/rel/mkcorpus.py":16:56)
    return loc("/tmp/rel/mkcorpus.py":16:56)
  }
}
