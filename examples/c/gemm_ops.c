// zetile's GEMM template from C (include/zetile/ops.h): out = relu(A @ B + bias)
// on the default device (ZETILE_DEVICE, else an Intel GPU, else the CPU),
// checked against a plain loop. No Python runs: the specialization is read
// from the installed prebuilt folder and compiled through the cache.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "zetile/ops.h"
#include "zetile/zetile.h"

static int fail(zt_status_t s) {
  fprintf(stderr, "error: %s\n", zt_status_message(s));
  zt_status_free(s);
  return 1;
}

int main(void) {
  enum { M = 100, N = 70, K = 90 };
  static float a[M * K], b[K * N], bias[N], out[M * N];
  for (int i = 0; i < M * K; ++i) a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
  for (int i = 0; i < K * N; ++i) b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
  for (int j = 0; j < N; ++j) bias[j] = 0.01f * (float)j;

  zt_device_t* dev = NULL;
  zt_status_t s = zt_device_open(NULL, &dev);
  if (s) return fail(s);
  zt_ops_gemm_desc_t d;
  zt_ops_gemm_desc_init(&d);  // fp32, batch 1, alpha 1, row-major operands
  d.m = M;
  d.n = N;
  d.k = K;
  d.activation = ZT_OPS_ACT_RELU;
  d.has_bias = true;
  d.bias = (zt_ops_strides3_t){0, 0, 1};  // one bias per column, the same for every row
  zt_ops_plan_t* plan = NULL;
  s = zt_ops_gemm_plan(dev, &d, &plan);
  if (s) return fail(s);

  zt_buffer_t *ba = NULL, *bb = NULL, *bx = NULL, *bo = NULL;
  if (!s) s = zt_buffer_alloc(dev, sizeof a, &ba);
  if (!s) s = zt_buffer_alloc(dev, sizeof b, &bb);
  if (!s) s = zt_buffer_alloc(dev, sizeof bias, &bx);
  if (!s) s = zt_buffer_alloc(dev, sizeof out, &bo);
  if (!s) s = zt_buffer_write(ba, 0, a, sizeof a);
  if (!s) s = zt_buffer_write(bb, 0, b, sizeof b);
  if (!s) s = zt_buffer_write(bx, 0, bias, sizeof bias);
  zt_ops_gemm_buffers_t bufs = {.a = ba, .b = bb, .out = bo, .bias = bx};
  if (!s) s = zt_ops_gemm_run(plan, &bufs);
  if (!s) s = zt_device_synchronize(dev);
  if (!s) s = zt_buffer_read(bo, 0, out, sizeof out);
  if (s) return fail(s);

  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = bias[j];
      for (int k = 0; k < K; ++k) ref += (double)a[i * K + k] * b[k * N + j];
      ref = ref > 0 ? ref : 0;
      worst = fmax(worst, fabs(ref - out[i * N + j]));
    }
  printf("%s on %s (%s): max abs error %.2g\n", zt_ops_plan_spec(plan),
         zt_device_info(dev)->name, zt_ops_plan_cache_hit(plan) ? "cache hit" : "compiled", worst);
  zt_buffer_release(ba);
  zt_buffer_release(bb);
  zt_buffer_release(bx);
  zt_buffer_release(bo);
  zt_ops_plan_release(plan);
  zt_device_release(dev);
  return worst < 1e-4 ? 0 : 1;
}
