/*
 * A stand-in libnvidia-ml.so.1 for machines without an NVIDIA GPU.
 *
 * The unmodified nvidia-ml-py binding loads this library through LD_LIBRARY_PATH, so every
 * struct layout, error code, N/A value and the two-call INSUFFICIENT_SIZE protocol travels the
 * same path as with the real driver. What the "GPUs" report comes from a scenario file named by
 * JUPYTER_GPUMEM_STANDIN_SCENARIO (format: docs/standin-nvml.md). The file is re-read whenever it
 * changes, checked at nvmlInit and nvmlDeviceGetCount, so a test may rewrite it while a kernel runs.
 *
 * A scenario's `driver delay_ms=` makes every query (nvmlInit too) sleep that long first: a slow driver, for
 * the benchmarks that check nothing reads NVML where waiting would hurt (a server's event loop).
 * `driver stall=1` makes every query wait until the scenario no longer says so: a driver that stalls (after
 * an Xid error, a GPU falling off the bus) and comes back, re-read every 20 ms while it waits.
 *
 * A process line's `pid=kernel` names the oldest IPython kernel reading the same scenario file, found in /proc
 * at nvmlInit and each nvmlDeviceGetCount: the Jupyter server, its kernels and any other reader of the
 * scenario then agree which process holds that memory (`pid=self`, each reader itself, cannot say that).
 *
 * Build with -DSTANDIN_NO_V3 to imitate a driver older than R470 that lacks the _v3 process queries,
 * and with -DSTANDIN_NO_MIG to imitate one older than R450 that lacks the MIG queries.
 */
#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
};

#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL
#define MAX_GPUS 64
#define MAX_MIG 8
#define MAX_PROCS 8192
#define MAX_TEXT 256

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;

/* Same layout as nvmlProcessInfo_v2_t / _v3_t in nvml.h (and c_nvmlProcessInfo_v2_t in pynvml). */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* Calls a scenario can make fail one by one: fail=utilization:not_supported,mig:no_permission */
enum { CALL_NAME, CALL_UUID, CALL_MEMORY, CALL_UTILIZATION, CALL_MIG, CALL_COMPUTE, CALL_GRAPHICS, CALL_CC, CALL_COUNT };
static const char *call_names[CALL_COUNT] = {"name", "uuid",    "memory",   "utilization",
                                             "mig",  "compute", "graphics", "cc"};

typedef struct device {
    int present;
    int is_mig;
    int index;  /* GPU index, or MIG slot within the parent */
    int parent; /* GPU index of a MIG device's parent */
    char name[MAX_TEXT];
    char uuid[MAX_TEXT];
    unsigned long long total, used;
    int util_gpu, util_mem;
    int cc_major, cc_minor; /* CUDA compute capability; 0.0: not given (the call is NOT_SUPPORTED) */
    int mig_mode; /* -1: not supported */
    int lost;
    int fail[CALL_COUNT];
} device_t;

typedef struct {
    int gpu;
    int graphics;
    int is_kernel; /* pid=kernel: the pid is kernel_pid, and the process is not listed while there is none */
    unsigned int pid;
    unsigned long long used;
    unsigned int gi, ci;
    char name[MAX_TEXT];
} process_t;

/* Handles are pointers into these arrays, so they stay valid across scenario reloads. */
static device_t gpus[MAX_GPUS];
static device_t migs[MAX_GPUS][MAX_MIG];
static process_t procs[MAX_PROCS];
static int gpu_count, proc_count;
static unsigned int kernel_pid; /* pid=kernel resolved (find_kernel); 0: no kernel reads this scenario */
static int driver_loaded = 1;
static char driver_version[MAX_TEXT] = "535.104.05";
static int cuda_version = 12020;
static unsigned int delay_us; /* every query sleeps this long first; read without the lock, so atomically */
static int stalled;           /* every query waits while the scenario says stall=1; also read atomically */

static int init_count;
static struct stat loaded_stat;
static char loaded_path[4096];
static int loaded_once;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- scenario parsing */

static const char *scenario_path(void) { return getenv("JUPYTER_GPUMEM_STANDIN_SCENARIO"); }

/* Reads one token: bare word, or key="quoted \"text\"". Returns the next read position. */
static const char *next_token(const char *p, char *out, size_t size) {
    size_t n = 0;
    while (*p && isspace((unsigned char)*p)) p++;
    while (*p && !isspace((unsigned char)*p)) {
        if (*p == '"') {
            p++;
            while (*p && *p != '"') {
                if (*p == '\\' && p[1]) p++;
                if (n + 1 < size) out[n++] = *p;
                p++;
            }
            if (*p == '"') p++;
        } else {
            if (n + 1 < size) out[n++] = *p;
            p++;
        }
    }
    out[n] = '\0';
    return p;
}

/* "5927MiB", "11.2GiB", "4GB", "1048576" (bytes) or "na" (not available). */
static unsigned long long parse_bytes(const char *text) {
    char *end;
    double value;
    if (strcmp(text, "na") == 0) return NVML_VALUE_NOT_AVAILABLE_ULL;
    value = strtod(text, &end);
    if (strcmp(end, "KiB") == 0) value *= 1024.0;
    else if (strcmp(end, "MiB") == 0) value *= 1024.0 * 1024.0;
    else if (strcmp(end, "GiB") == 0) value *= 1024.0 * 1024.0 * 1024.0;
    else if (strcmp(end, "MB") == 0) value *= 1e6;
    else if (strcmp(end, "GB") == 0) value *= 1e9;
    return (unsigned long long)value;
}

static int parse_code(const char *text) {
    if (strcmp(text, "not_supported") == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (strcmp(text, "no_permission") == 0) return NVML_ERROR_NO_PERMISSION;
    if (strcmp(text, "gpu_lost") == 0) return NVML_ERROR_GPU_IS_LOST;
    if (strcmp(text, "function_not_found") == 0) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (strcmp(text, "unknown") == 0) return NVML_ERROR_UNKNOWN;
    return atoi(text);
}

/* fail=utilization:not_supported,mig:no_permission */
static void parse_failures(device_t *dev, char *list) {
    char *item = strtok(list, ",");
    while (item) {
        char *colon = strchr(item, ':');
        if (colon) {
            *colon = '\0';
            for (int c = 0; c < CALL_COUNT; c++)
                if (strcmp(item, call_names[c]) == 0) dev->fail[c] = parse_code(colon + 1);
        }
        item = strtok(NULL, ",");
    }
}

static void parse_device_key(device_t *dev, const char *key, char *value) {
    if (strcmp(key, "name") == 0) snprintf(dev->name, MAX_TEXT, "%s", value);
    else if (strcmp(key, "uuid") == 0) snprintf(dev->uuid, MAX_TEXT, "%s", value);
    else if (strcmp(key, "total") == 0) dev->total = parse_bytes(value);
    else if (strcmp(key, "used") == 0) dev->used = parse_bytes(value);
    else if (strcmp(key, "util") == 0) dev->util_gpu = atoi(value);
    else if (strcmp(key, "mem_util") == 0) dev->util_mem = atoi(value);
    else if (strcmp(key, "cc") == 0) sscanf(value, "%d.%d", &dev->cc_major, &dev->cc_minor);
    else if (strcmp(key, "mig") == 0) dev->mig_mode = strcmp(value, "on") == 0 ? 1 : strcmp(value, "off") == 0 ? 0 : -1;
    else if (strcmp(key, "lost") == 0) dev->lost = atoi(value);
    else if (strcmp(key, "fail") == 0) parse_failures(dev, value);
}

static void parse_line(const char *line) {
    char kind[32], token[2 * MAX_TEXT];
    const char *p = next_token(line, kind, sizeof kind);
    device_t *dev = NULL;
    process_t *proc = NULL;

    if (kind[0] == '\0' || kind[0] == '#') return;
    if (strcmp(kind, "gpu") == 0 && gpu_count < MAX_GPUS) {
        dev = &gpus[gpu_count];
        memset(dev, 0, sizeof *dev);
        dev->present = 1;
        dev->index = gpu_count++;
        dev->mig_mode = 0;
    } else if (strcmp(kind, "mig") == 0) {
        dev = NULL; /* resolved once parent= is read */
    } else if (strcmp(kind, "proc") == 0 && proc_count < MAX_PROCS) {
        proc = &procs[proc_count++];
        memset(proc, 0, sizeof *proc);
    } else if (strcmp(kind, "driver") != 0) {
        return;
    }

    while (*p) {
        char *eq;
        p = next_token(p, token, sizeof token);
        eq = strchr(token, '=');
        if (!eq) continue;
        *eq = '\0';
        const char *key = token;
        char *value = eq + 1;
        if (strcmp(kind, "driver") == 0) {
            if (strcmp(key, "version") == 0) snprintf(driver_version, MAX_TEXT, "%s", value);
            else if (strcmp(key, "cuda") == 0) cuda_version = atoi(value);
            else if (strcmp(key, "loaded") == 0) driver_loaded = atoi(value);
            else if (strcmp(key, "delay_ms") == 0) __atomic_store_n(&delay_us, (unsigned int)(atof(value) * 1000.0), __ATOMIC_RELAXED);
            else if (strcmp(key, "stall") == 0) __atomic_store_n(&stalled, atoi(value), __ATOMIC_RELAXED);
        } else if (strcmp(kind, "mig") == 0 && !dev && strcmp(key, "parent") == 0) {
            int parent = atoi(value);
            if (parent < 0 || parent >= MAX_GPUS) return;
            for (int slot = 0; slot < MAX_MIG; slot++) {
                if (!migs[parent][slot].present) {
                    dev = &migs[parent][slot];
                    memset(dev, 0, sizeof *dev);
                    dev->present = 1;
                    dev->is_mig = 1;
                    dev->index = slot;
                    dev->parent = parent;
                    break;
                }
            }
            if (!dev) return;
        } else if (dev) {
            parse_device_key(dev, key, value);
        } else if (proc) {
            if (strcmp(key, "gpu") == 0) proc->gpu = atoi(value);
            else if (strcmp(key, "pid") == 0 && strcmp(value, "kernel") == 0)
                proc->is_kernel = 1;
            else if (strcmp(key, "pid") == 0)
                proc->pid = strcmp(value, "self") == 0 ? (unsigned int)getpid() : (unsigned int)strtoul(value, NULL, 10);
            else if (strcmp(key, "used") == 0) proc->used = parse_bytes(value);
            else if (strcmp(key, "kind") == 0) proc->graphics = strcmp(value, "graphics") == 0;
            else if (strcmp(key, "gi") == 0) proc->gi = (unsigned int)atoi(value);
            else if (strcmp(key, "ci") == 0) proc->ci = (unsigned int)atoi(value);
            else if (strcmp(key, "name") == 0) snprintf(proc->name, MAX_TEXT, "%s", value);
        }
    }
}

static void reset_scenario(void) {
    gpu_count = proc_count = 0;
    driver_loaded = 1;
    snprintf(driver_version, MAX_TEXT, "%s", "535.104.05");
    cuda_version = 12020;
    __atomic_store_n(&delay_us, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&stalled, 0, __ATOMIC_RELAXED);
    for (int g = 0; g < MAX_GPUS; g++) {
        gpus[g].present = 0;
        for (int s = 0; s < MAX_MIG; s++) migs[g][s].present = 0;
    }
}

/* Re-reads the scenario when the file changed (inode, size or mtime). Call with the lock held. */
static int refresh_scenario(void) {
    const char *path = scenario_path();
    struct stat now;
    FILE *file;
    char line[4096];

    if (!path || stat(path, &now) != 0) {
        reset_scenario();
        loaded_once = 0;
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    if (loaded_once && strcmp(path, loaded_path) == 0 && now.st_ino == loaded_stat.st_ino && now.st_size == loaded_stat.st_size &&
        now.st_mtim.tv_sec == loaded_stat.st_mtim.tv_sec && now.st_mtim.tv_nsec == loaded_stat.st_mtim.tv_nsec)
        return NVML_SUCCESS;
    file = fopen(path, "r");
    if (!file) return NVML_ERROR_DRIVER_NOT_LOADED;
    reset_scenario();
    while (fgets(line, sizeof line, file)) parse_line(line);
    fclose(file);
    loaded_stat = now;
    snprintf(loaded_path, sizeof loaded_path, "%s", path);
    loaded_once = 1;
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- pid=kernel */

/* The whole of a /proc file (their sizes read as 0); NULL when it cannot be read. The caller frees it. */
static char *slurp(const char *path, size_t *length) {
    FILE *file = fopen(path, "r");
    size_t size = 4096, n = 0, got;
    char *text = file ? malloc(size + 1) : NULL;
    if (!text) {
        if (file) fclose(file);
        return NULL;
    }
    while ((got = fread(text + n, 1, size - n, file)) > 0) {
        n += got;
        if (n == size) {
            char *bigger = realloc(text, 2 * size + 1);
            if (!bigger) break;
            text = bigger;
            size *= 2;
        }
    }
    fclose(file);
    text[n] = '\0';
    *length = n;
    return text;
}

/* Whether one of the NUL-separated words of /proc/<pid>/<name> passes `wanted`. */
static int any_word(unsigned int pid, const char *name, int (*wanted)(const char *word, const char *arg), const char *arg) {
    char path[64];
    size_t length;
    char *text;
    int found = 0;
    snprintf(path, sizeof path, "/proc/%u/%s", pid, name);
    if (!(text = slurp(path, &length))) return 0;
    for (size_t at = 0; at < length && !found; at += strlen(text + at) + 1) found = wanted(text + at, arg);
    free(text);
    return found;
}

/* How `python -m ipykernel_launcher` (jupyter_client, VS Code) or `python -m ipykernel` starts a kernel. */
static int starts_a_kernel(const char *word, const char *unused) {
    size_t n = strlen(word), suffix = strlen("/ipykernel_launcher.py");
    (void)unused;
    return strcmp(word, "ipykernel_launcher") == 0 || strcmp(word, "ipykernel") == 0 ||
           (n > suffix && strcmp(word + n - suffix, "/ipykernel_launcher.py") == 0);
}

static int names_scenario(const char *word, const char *scenario) {
    size_t n = strlen("JUPYTER_GPUMEM_STANDIN_SCENARIO=");
    return strncmp(word, "JUPYTER_GPUMEM_STANDIN_SCENARIO=", n) == 0 && strcmp(word + n, scenario) == 0;
}

/* When the process started (field 22 of /proc/<pid>/stat, after the command name in parentheses). */
static unsigned long long start_time(unsigned int pid) {
    char path[64];
    size_t length;
    unsigned long long start = ~0ULL;
    char *text, *after;
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    if (!(text = slurp(path, &length))) return start;
    if ((after = strrchr(text, ')')))
        sscanf(after + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &start);
    free(text);
    return start;
}

/* The oldest process that runs an IPython kernel and whose environment names this scenario file. Environments
 * show only for this user's processes (or to root): a kernel is one of the user's, like the server. Oldest, so
 * the memory stays with the first notebook's kernel while others open; a restart hands it to the next one. */
static unsigned int find_kernel(void) {
    const char *scenario = scenario_path();
    unsigned long long oldest = ~0ULL;
    unsigned int found = 0;
    struct dirent *entry;
    DIR *proc = scenario ? opendir("/proc") : NULL;
    if (!proc) return 0;
    while ((entry = readdir(proc))) {
        unsigned int pid = (unsigned int)strtoul(entry->d_name, NULL, 10);
        unsigned long long start;
        if (pid == 0 || !any_word(pid, "cmdline", starts_a_kernel, NULL) || !any_word(pid, "environ", names_scenario, scenario))
            continue;
        start = start_time(pid);
        if (start < oldest || (start == oldest && pid < found)) {
            oldest = start;
            found = pid;
        }
    }
    closedir(proc);
    return found;
}

/* Finds the kernel again if the scenario has a pid=kernel line: kernels come and go. Call with the lock held. */
static void resolve_kernel(void) {
    for (int i = 0; i < proc_count; i++) {
        if (procs[i].is_kernel) {
            kernel_pid = find_kernel();
            return;
        }
    }
}

static int listed(const process_t *proc) { return !proc->is_kernel || kernel_pid != 0; }

static unsigned int pid_of(const process_t *proc) { return proc->is_kernel ? kernel_pid : proc->pid; }

/* ---------------------------------------------------------------- entry points */

/* A slow driver (scenario `driver delay_ms=`): the query waits before it takes the lock. A stalled one
 * (`driver stall=1`): it waits until the scenario file is rewritten without the stall. */
static void slow_down(void) {
    unsigned int us = __atomic_load_n(&delay_us, __ATOMIC_RELAXED);
    if (us) usleep(us);
    while (__atomic_load_n(&stalled, __ATOMIC_RELAXED)) {
        usleep(20000);
        pthread_mutex_lock(&lock);
        refresh_scenario();
        pthread_mutex_unlock(&lock);
    }
}

#define EXPORT __attribute__((visibility("default")))

/* Lets the NVML module label a simulated GPU as such: a real driver has no such symbol. */
EXPORT const char *jupyterGpumemStandinScenario(void) {
    const char *path = scenario_path();
    return path ? path : "";
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    nvmlReturn_t ret;
    (void)flags;
    pthread_mutex_lock(&lock);
    refresh_scenario();
    pthread_mutex_unlock(&lock);
    slow_down(); /* without persistence mode, a large node's nvmlInit takes seconds */
    pthread_mutex_lock(&lock);
    ret = refresh_scenario();
    if (ret == NVML_SUCCESS && !driver_loaded) ret = NVML_ERROR_DRIVER_NOT_LOADED;
    if (ret == NVML_SUCCESS) init_count++;
    if (ret == NVML_SUCCESS) resolve_kernel();
    pthread_mutex_unlock(&lock);
    return ret;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

EXPORT nvmlReturn_t nvmlShutdown(void) {
    nvmlReturn_t ret = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (init_count == 0) ret = NVML_ERROR_UNINITIALIZED;
    else init_count--;
    pthread_mutex_unlock(&lock);
    return ret;
}

static void copy_text(char *out, unsigned int length, const char *text, nvmlReturn_t *ret) {
    if (!out) *ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (strlen(text) + 1 > length) *ret = NVML_ERROR_INSUFFICIENT_SIZE;
    else memcpy(out, text, strlen(text) + 1);
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t ret = NVML_SUCCESS;
    slow_down();
    pthread_mutex_lock(&lock);
    if (!init_count) ret = NVML_ERROR_UNINITIALIZED;
    else copy_text(version, length, driver_version, &ret);
    pthread_mutex_unlock(&lock);
    return ret;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
    if (!version) return NVML_ERROR_INVALID_ARGUMENT;
    *version = cuda_version;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) { return nvmlSystemGetCudaDriverVersion(version); }

EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length) {
    nvmlReturn_t ret = NVML_ERROR_NOT_FOUND;
    slow_down();
    pthread_mutex_lock(&lock);
    if (!init_count) ret = NVML_ERROR_UNINITIALIZED;
    for (int i = 0; init_count && i < proc_count; i++) {
        if (listed(&procs[i]) && pid_of(&procs[i]) == pid && procs[i].name[0]) {
            ret = NVML_SUCCESS;
            copy_text(name, length, procs[i].name, &ret);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return ret;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    nvmlReturn_t ret = NVML_SUCCESS;
    slow_down();
    pthread_mutex_lock(&lock);
    if (!init_count) ret = NVML_ERROR_UNINITIALIZED;
    else if (!count) ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (refresh_scenario() != NVML_SUCCESS || !driver_loaded) ret = NVML_ERROR_DRIVER_NOT_LOADED;
    else {
        resolve_kernel();
        *count = (unsigned int)gpu_count;
    }
    pthread_mutex_unlock(&lock);
    return ret;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, device_t **device) {
    nvmlReturn_t ret = NVML_SUCCESS;
    slow_down();
    pthread_mutex_lock(&lock);
    if (!init_count) ret = NVML_ERROR_UNINITIALIZED;
    else if (!device || index >= (unsigned int)gpu_count) ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (gpus[index].lost) ret = NVML_ERROR_GPU_IS_LOST;
    else *device = &gpus[index];
    pthread_mutex_unlock(&lock);
    return ret;
}

/* Common checks for a per-device call; on success returns with the lock held. */
static nvmlReturn_t enter(device_t *dev, int call) {
    nvmlReturn_t ret = NVML_SUCCESS;
    slow_down();
    pthread_mutex_lock(&lock);
    if (!init_count) ret = NVML_ERROR_UNINITIALIZED;
    else if (!dev || !dev->present) ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (dev->lost || (dev->is_mig && gpus[dev->parent].lost)) ret = NVML_ERROR_GPU_IS_LOST;
    else if (dev->fail[call]) ret = dev->fail[call];
    if (ret != NVML_SUCCESS) pthread_mutex_unlock(&lock);
    return ret;
}

static nvmlReturn_t leave(nvmlReturn_t ret) {
    pthread_mutex_unlock(&lock);
    return ret;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(device_t *dev, char *name, unsigned int length) {
    nvmlReturn_t ret = enter(dev, CALL_NAME);
    if (ret != NVML_SUCCESS) return ret;
    copy_text(name, length, dev->name, &ret);
    return leave(ret);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(device_t *dev, char *uuid, unsigned int length) {
    nvmlReturn_t ret = enter(dev, CALL_UUID);
    if (ret != NVML_SUCCESS) return ret;
    copy_text(uuid, length, dev->uuid, &ret);
    return leave(ret);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(device_t *dev, nvmlMemory_t *memory) {
    nvmlReturn_t ret = enter(dev, CALL_MEMORY);
    if (ret != NVML_SUCCESS) return ret;
    if (!memory) return leave(NVML_ERROR_INVALID_ARGUMENT);
    memory->total = dev->total;
    memory->used = dev->used;
    memory->free = dev->total > dev->used ? dev->total - dev->used : 0;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(device_t *dev, int *major, int *minor) {
    nvmlReturn_t ret = enter(dev, CALL_CC);
    if (ret != NVML_SUCCESS) return ret;
    if (!major || !minor) return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (dev->cc_major == 0) return leave(NVML_ERROR_NOT_SUPPORTED);
    *major = dev->cc_major;
    *minor = dev->cc_minor;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(device_t *dev, nvmlUtilization_t *util) {
    nvmlReturn_t ret = enter(dev, CALL_UTILIZATION);
    if (ret != NVML_SUCCESS) return ret;
    /* As with real MIG: utilisation is not reported while MIG mode is on, nor on MIG devices. */
    if (dev->is_mig || dev->mig_mode == 1) return leave(NVML_ERROR_NOT_SUPPORTED);
    if (!util) return leave(NVML_ERROR_INVALID_ARGUMENT);
    util->gpu = (unsigned int)dev->util_gpu;
    util->memory = (unsigned int)dev->util_mem;
    return leave(NVML_SUCCESS);
}

#ifndef STANDIN_NO_MIG
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(device_t *dev, unsigned int *current, unsigned int *pending) {
    nvmlReturn_t ret = enter(dev, CALL_MIG);
    if (ret != NVML_SUCCESS) return ret;
    if (dev->is_mig || dev->mig_mode < 0) return leave(NVML_ERROR_NOT_SUPPORTED);
    if (!current || !pending) return leave(NVML_ERROR_INVALID_ARGUMENT);
    *current = *pending = (unsigned int)dev->mig_mode;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(device_t *dev, unsigned int *count) {
    nvmlReturn_t ret = enter(dev, CALL_MIG);
    if (ret != NVML_SUCCESS) return ret;
    if (dev->is_mig || dev->mig_mode < 0) return leave(NVML_ERROR_NOT_SUPPORTED);
    if (!count) return leave(NVML_ERROR_INVALID_ARGUMENT);
    *count = MAX_MIG;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(device_t *dev, unsigned int index, device_t **mig) {
    nvmlReturn_t ret = enter(dev, CALL_MIG);
    if (ret != NVML_SUCCESS) return ret;
    if (dev->is_mig || dev->mig_mode != 1) return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!mig || index >= MAX_MIG) return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!migs[dev->index][index].present) return leave(NVML_ERROR_NOT_FOUND);
    *mig = &migs[dev->index][index];
    return leave(NVML_SUCCESS);
}
#endif

/* The real two-call protocol: a first call with too small a buffer returns INSUFFICIENT_SIZE
 * and the number needed; a call with room fills the array and sets the count. */
static nvmlReturn_t running_processes(device_t *dev, int graphics, unsigned int *count, nvmlProcessInfo_t *infos) {
    nvmlReturn_t ret = enter(dev, graphics ? CALL_GRAPHICS : CALL_COMPUTE);
    unsigned int found = 0;
    if (ret != NVML_SUCCESS) return ret;
    if (!count) return leave(NVML_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < proc_count; i++)
        if (procs[i].gpu == dev->index && procs[i].graphics == graphics && !dev->is_mig && listed(&procs[i])) found++;
    if (found > *count || (found > 0 && !infos)) {
        *count = found;
        return leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    *count = 0;
    for (int i = 0; i < proc_count; i++) {
        if (procs[i].gpu != dev->index || procs[i].graphics != graphics || dev->is_mig || !listed(&procs[i])) continue;
        infos[*count].pid = pid_of(&procs[i]);
        infos[*count].usedGpuMemory = procs[i].used;
        infos[*count].gpuInstanceId = dev->mig_mode == 1 ? procs[i].gi : 0xFFFFFFFFu;
        infos[*count].computeInstanceId = dev->mig_mode == 1 ? procs[i].ci : 0xFFFFFFFFu;
        (*count)++;
    }
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(device_t *dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    return running_processes(dev, 0, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(device_t *dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    return running_processes(dev, 1, count, infos);
}

#ifndef STANDIN_NO_V3
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(device_t *dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    return running_processes(dev, 0, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(device_t *dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    return running_processes(dev, 1, count, infos);
}
#endif
