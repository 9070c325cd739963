// One tiny kernel, compiled by scripts/build_fatbin_fixtures.sh into shared libraries whose fatbins
// hold chosen sets of SASS and PTX images.
__global__ void add_one(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

extern "C" int launch_add_one(float *x, int n) {
    add_one<<<(n + 255) / 256, 256>>>(x, n);
    return 0;
}
