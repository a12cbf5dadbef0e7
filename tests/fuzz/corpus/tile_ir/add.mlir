module {
  func.func @add(%v0: !tile.ptr<f32>, %v1: !tile.ptr<f32>, %v2: !tile.ptr<f32>, %v3: i32) attributes {zt.kernel, zt.divisibility = array<i32: 16, 16, 16, 0>} {
    %v4 = "tile.program_id"() {axis = 0 : i32} : () -> i32 loc("/tmp/rel/mkcorpus.py":6:26)
    %v5 = arith.constant 64 : i32 loc("/tmp/rel/mkcorpus.py":6:31)
    %v6 = arith.muli %v4, %v5 : i32 loc("/tmp/rel/mkcorpus.py":6:31)
    %v7 = "tile.make_range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32> loc("/tmp/rel/mkcorpus.py":6:52)
    %v8 = "tile.splat"(%v6) : (i32) -> tensor<64xi32> loc("/tmp/rel/mkcorpus.py":6:52)
    %v9 = arith.addi %v8, %v7 : tensor<64xi32> loc("/tmp/rel/mkcorpus.py":6:52)
    %v10 = "tile.splat"(%v3) : (i32) -> tensor<64xi32> loc("/tmp/rel/mkcorpus.py":7:16)
    %v11 = arith.cmpi slt, %v9, %v10 : tensor<64xi32> loc("/tmp/rel/mkcorpus.py":7:16)
    %v12 = "tile.splat"(%v2) : (!tile.ptr<f32>) -> tensor<64x!tile.ptr<f32>> loc("/tmp/rel/mkcorpus.py":8:24)
    %v13 = "tile.addptr"(%v12, %v9) : (tensor<64x!tile.ptr<f32>>, tensor<64xi32>) -> tensor<64x!tile.ptr<f32>> loc("/tmp/rel/mkcorpus.py":8:24)
    %v14 = "tile.splat"(%v0) : (!tile.ptr<f32>) -> tensor<64x!tile.ptr<f32>> loc("/tmp/rel/mkcorpus.py":8:46)
    %v15 = "tile.addptr"(%v14, %v9) : (tensor<64x!tile.ptr<f32>>, tensor<64xi32>) -> tensor<64x!tile.ptr<f32>> loc("/tmp/rel/mkcorpus.py":8:46)
    %v16 = "tile.load"(%v15, %v11) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x!tile.ptr<f32>>, tensor<64xi1>) -> tensor<64xf32> loc("/tmp/rel/mkcorpus.py":8:57)
    %v17 = "tile.splat"(%v1) : (!tile.ptr<f32>) -> tensor<64x!tile.ptr<f32>> loc("/tmp/rel/mkcorpus.py":8:78)
    %v18 = "tile.addptr"(%v17, %v9) : (tensor<64x!tile.ptr<f32>>, tensor<64xi32>) -> tensor<64x!tile.ptr<f32>> loc("/tmp/rel/mkcorpus.py":8:78)
    %v19 = "tile.load"(%v18, %v11) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x!tile.ptr<f32>>, tensor<64xi1>) -> tensor<64xf32> loc("/tmp/rel/mkcorpus.py":8:89)
    %v20 = arith.addf %v16, %v19 : tensor<64xf32> loc("/tmp/rel/mkcorpus.py":8:89)
    "tile.store"(%v13, %v20, %v11) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<64x!tile.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> () loc("/tmp/rel/mkcorpus.py":8:98)
    return loc("/tmp/rel/mkcorpus.py":8:98)
  }
}
