// A library no test program links: loading it is a load the CUDA tracer's sink must notice.
int alloclab_cuda_loadable(void) {
  return 1;
}
