/* cupti_floor: the least a CUPTI-based injection can do -- subscribe to CUPTI and enable the
 * callbacks kreplay enables for launches no tool replays (the launch entry points and context
 * creation), with a callback that returns at once. Loaded through CUDA_INJECTION64_PATH by the
 * `overhead` section of scripts/gpu-check.sh, next to plain runs and kreplay, it tells how much of
 * kreplay's fixed start-up and per-launch cost is CUPTI's own. A benchmark helper, not installed.
 */
#include <cupti.h>
#include <stdio.h>

static void CUPTIAPI on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) {
  (void)user;
  (void)domain;
  (void)cbid;
  (void)data;
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, on_callback, NULL) != CUPTI_SUCCESS) {
    fprintf(stderr, "cupti_floor: cuptiSubscribe failed\n");
    return 1;
  }
  static const CUpti_CallbackId launches[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
  for (unsigned i = 0; i < sizeof(launches) / sizeof(launches[0]); ++i) {
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]);
  }
  cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  return 1;
}
