"""The functions of tl.extra.libdevice (../libdevice.py, which is the public
module: import from there), one module per family, each importing only the
families above it in this list:

  float_bits    a float's bits, one-step rounding, classification (isnan, signbit)
  elementary    zetile's math ops under libdevice's names; trig, hyperbolic, exp/log, rint
  integer       bit intrinsics (clz, popc, brev, ffs, byte_perm, mulhi, sad, hadd)
  ieee          nextafter, ilogb/logb, ldexp/scalbn, remainder, llrint/llround
  reinterpret   float <-> integer bits, double <-> 32-bit halves
  conversions   float/double/integer conversions in every rounding mode
  gamma         sinpi, cospi, lgamma, tgamma
  rounding      add/sub/mul/div/rcp/sqrt/fma with a directed rounding
  norms         norm3d/4d, hypot, reciprocals, rsqrt_rn, fast_* aliases
  chebyshev     the generated Chebyshev series (erfcx, Bessel)
  erf           erfc, erfcx, normcdf, erfinv, erfcinv, normcdfinv
  bessel        j0/j1/y0/y1, cyl_bessel_i0/i1, jn, yn
"""
