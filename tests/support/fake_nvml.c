/*
 * A stand-in for the NVIDIA driver's libnvidia-ml.so.1, faking NVML only at its C API edge.
 *
 * The driver probe loads it as it loads the real library (by absolute path, from LD_LIBRARY_PATH and
 * the other trusted places) and calls these functions through its ctypes binding, or pynvml's, exactly
 * as it calls the real library; the answers come from the FAKE_NVML environment variable:
 *
 *   FAKE_NVML="init=0;driver=580.159.04;cuda=13000;count_err=0;dev=NVIDIA H200,9.0,143771,140000,GPU-uuid-0,0;dev=..."
 *
 *   init=<code>      nvmlInit* returns this NVML return code (9 driver not loaded, 18 lib/RM mismatch, ...)
 *   driver=<text>    nvmlSystemGetDriverVersion
 *   cuda=<int>       nvmlSystemGetCudaDriverVersion(_v2), e.g. 13000 for 13.0
 *   count_err=<code> nvmlDeviceGetCount_v2 fails with this code
 *   dev=name,cc,total_mib,free_mib,uuid[,compute_mode]   one device per entry (at most 16)
 *   fail=<function>:<code>   that function returns this code once NVML is initialised, e.g.
 *                    fail=nvmlDeviceGetUUID:3 (NOT_SUPPORTED, as on some boards); repeatable (at most 16)
 *
 * Built with -DFAKE_NVML_NO_CUDA_VERSION_V2 it lacks nvmlSystemGetCudaDriverVersion_v2, as drivers older
 * than the function do.
 *
 * FAKE_NVML_LOG=<file> appends the name of every call, so tests can check that nvmlShutdown ran.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define MAX_DEVICES 16
#define MAX_FAILURES 16

typedef struct {
    unsigned index;
    char name[96];
    char uuid[96];
    int cc_major, cc_minor;
    unsigned long long total, free;
    int compute_mode;
} fake_device;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;

static int g_parsed = 0;
/* As NVML counts initialisations: shutdown takes effect when every init has been shut down. */
static int g_initialised = 0;
static int g_init_rc = 0, g_count_rc = 0, g_cuda = 13000;
static char g_driver[96] = "580.159.04";
static fake_device g_devices[MAX_DEVICES];
static unsigned g_count = 0;
static struct { char name[64]; int rc; } g_failures[MAX_FAILURES];
static unsigned g_nfailures = 0;

static void log_call(const char *name) {
    const char *path = getenv("FAKE_NVML_LOG");
    if (!path || !*path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%s\n", name);
    fclose(f);
}

static void parse_device(char *spec) {
    if (g_count >= MAX_DEVICES) return;
    fake_device *d = &g_devices[g_count];
    memset(d, 0, sizeof(*d));
    d->index = g_count;
    char *fields[6] = {0};
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(spec, ",", &save); tok && n < 6; tok = strtok_r(NULL, ",", &save)) fields[n++] = tok;
    if (n > 0) snprintf(d->name, sizeof d->name, "%s", fields[0]);
    if (n > 1) sscanf(fields[1], "%d.%d", &d->cc_major, &d->cc_minor);
    if (n > 2) d->total = strtoull(fields[2], NULL, 10) * 1024ULL * 1024ULL;
    if (n > 3) d->free = strtoull(fields[3], NULL, 10) * 1024ULL * 1024ULL;
    if (n > 4) snprintf(d->uuid, sizeof d->uuid, "%s", fields[4]);
    else snprintf(d->uuid, sizeof d->uuid, "GPU-fake-%u", g_count);
    if (n > 5) d->compute_mode = atoi(fields[5]);
    g_count++;
}

static void parse_failure(const char *spec) {
    const char *colon = strrchr(spec, ':');
    if (!colon || g_nfailures >= MAX_FAILURES) return;
    snprintf(g_failures[g_nfailures].name, sizeof g_failures[g_nfailures].name, "%.*s", (int)(colon - spec), spec);
    g_failures[g_nfailures].rc = atoi(colon + 1);
    g_nfailures++;
}

/* The code injected for this function with fail=..., or NVML_SUCCESS. */
static nvmlReturn_t injected(const char *name) {
    for (unsigned i = 0; i < g_nfailures; i++)
        if (!strcmp(g_failures[i].name, name)) return g_failures[i].rc;
    return NVML_SUCCESS;
}

static void parse_config(void) {
    if (g_parsed) return;
    g_parsed = 1;
    const char *env = getenv("FAKE_NVML");
    if (!env) return;
    char *copy = strdup(env);
    if (!copy) return;
    char *save = NULL;
    for (char *item = strtok_r(copy, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) continue;
        *eq = '\0';
        const char *key = item;
        char *value = eq + 1;
        if (!strcmp(key, "init")) g_init_rc = atoi(value);
        else if (!strcmp(key, "driver")) snprintf(g_driver, sizeof g_driver, "%s", value);
        else if (!strcmp(key, "cuda")) g_cuda = atoi(value);
        else if (!strcmp(key, "count_err")) g_count_rc = atoi(value);
        else if (!strcmp(key, "dev")) parse_device(value);
        else if (!strcmp(key, "fail")) parse_failure(value);
    }
    free(copy);
}

static nvmlReturn_t do_init(const char *name) {
    log_call(name);
    parse_config();
    if (g_init_rc) return g_init_rc;
    g_initialised++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned flags) { (void)flags; return do_init("nvmlInitWithFlags"); }
nvmlReturn_t nvmlInit_v2(void) { return do_init("nvmlInit_v2"); }
nvmlReturn_t nvmlInit(void) { return do_init("nvmlInit"); }

nvmlReturn_t nvmlShutdown(void) {
    log_call("nvmlShutdown");
    if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
    g_initialised--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t rc) {
    switch (rc) {
    case 0: return "Success";
    case 9: return "Driver Not Loaded";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    default: return "Fake NVML error";
    }
}

static nvmlReturn_t copy_text(char *out, unsigned len, const char *text) {
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(out, text);
    return NVML_SUCCESS;
}

#define REQUIRE_INIT() do { if (!g_initialised) return NVML_ERROR_UNINITIALIZED; } while (0)
/* After the initialisation check, as the real library answers UNINITIALIZED first. */
#define INJECTED(name) do { nvmlReturn_t rc_ = injected(name); if (rc_) return rc_; } while (0)

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned len) {
    log_call("nvmlSystemGetDriverVersion");
    REQUIRE_INIT();
    INJECTED("nvmlSystemGetDriverVersion");
    return copy_text(version, len, g_driver);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned len) {
    REQUIRE_INIT();
    return copy_text(version, len, "13.580.159.04");
}

static nvmlReturn_t cuda_driver_version(int *v) {
    REQUIRE_INIT();
    if (!v) return NVML_ERROR_INVALID_ARGUMENT;
    *v = g_cuda;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    if (g_initialised) INJECTED("nvmlSystemGetCudaDriverVersion");
    return cuda_driver_version(v);
}

#ifndef FAKE_NVML_NO_CUDA_VERSION_V2
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
    log_call("nvmlSystemGetCudaDriverVersion_v2");
    if (g_initialised) INJECTED("nvmlSystemGetCudaDriverVersion_v2");
    return cuda_driver_version(v);
}
#endif

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
    log_call("nvmlDeviceGetCount_v2");
    REQUIRE_INIT();
    if (g_count_rc) return g_count_rc;
    INJECTED("nvmlDeviceGetCount_v2");
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = g_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned *count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, fake_device **device) {
    REQUIRE_INIT();
    INJECTED("nvmlDeviceGetHandleByIndex_v2");
    if (index >= g_count || !device) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &g_devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, fake_device **device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

#define CHECK_DEVICE(d) do { REQUIRE_INIT(); if (!(d)) return NVML_ERROR_INVALID_ARGUMENT; INJECTED(__func__); } while (0)

nvmlReturn_t nvmlDeviceGetName(fake_device *d, char *name, unsigned len) {
    CHECK_DEVICE(d);
    return copy_text(name, len, d->name);
}

nvmlReturn_t nvmlDeviceGetUUID(fake_device *d, char *uuid, unsigned len) {
    CHECK_DEVICE(d);
    return copy_text(uuid, len, d->uuid);
}

nvmlReturn_t nvmlDeviceGetIndex(fake_device *d, unsigned *index) {
    CHECK_DEVICE(d);
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = d->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(fake_device *d, int *major, int *minor) {
    CHECK_DEVICE(d);
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *major = d->cc_major;
    *minor = d->cc_minor;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(fake_device *d, nvmlMemory_t *mem) {
    CHECK_DEVICE(d);
    if (!mem) return NVML_ERROR_INVALID_ARGUMENT;
    mem->total = d->total;
    mem->free = d->free;
    mem->used = d->total - d->free;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(fake_device *d, nvmlMemory_v2_t *mem) {
    CHECK_DEVICE(d);
    if (!mem) return NVML_ERROR_INVALID_ARGUMENT;
    mem->total = d->total;
    mem->reserved = 0;
    mem->free = d->free;
    mem->used = d->total - d->free;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeMode(fake_device *d, int *mode) {
    CHECK_DEVICE(d);
    if (!mode) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = d->compute_mode;
    return NVML_SUCCESS;
}
