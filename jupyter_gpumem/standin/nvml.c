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
 * MIG device handles answer their slice's name, UUID, memory, GPU and compute instance ids (a `mig` line's gi= and
 * ci=), and the processes of their GPU instance (the `proc` lines of the same gi=). The driver-enforced memory limits of drivers from 615 (nvmlDevice{Get,Set}MemoryLimits_v1)
 * read `limit` lines, and a Set rewrites the scenario file, so every process reading it sees the new limit. The
 * addressing mode (drivers from 580) reads a `gpu` line's addressing=.
 *
 * Build with -DSTANDIN_NO_V3 to imitate a driver older than R470 that lacks the _v3 process queries,
 * and with -DSTANDIN_NO_MIG to imitate one older than R450 that lacks the MIG queries.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL
#define NVML_DEVICE_MEMORY_LIMIT_MAX 0xFFFFFFFFFFFFFFFFULL
#define MAX_GPUS 64
#define MAX_MIG 8
#define MAX_PROCS 8192
#define MAX_LIMITS 256
#define MAX_TEXT 256
#define MAX_PATH 4096

/* The first drivers with each call: older ones lack the symbol, which the binding reports as FUNCTION_NOT_FOUND. */
#define MEMORY_LIMITS_SINCE 615
#define ADDRESSING_MODE_SINCE 580

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

/* nvmlGetMemoryLimits_v1_t and nvmlSetMemoryLimits_v1_t (pynvml's c_nvmlGetMemoryLimits_v1_t and
 * c_nvmlSetMemoryLimits_v1_t): nameSpace is the absolute path of a cgroup v2 directory. */
typedef struct {
    const char *nameSpace;
    unsigned long long softLimit, hardLimit, currentUsed;
} nvmlGetMemoryLimits_v1_t;

typedef struct {
    const char *nameSpace;
    unsigned long long softLimit, hardLimit;
} nvmlSetMemoryLimits_v1_t;

/* nvmlDeviceAddressingMode_v1_t: value is NONE 0, HMM 1 or ATS 2. */
typedef struct {
    unsigned int version;
    unsigned int value;
} nvmlDeviceAddressingMode_t;

#define NVML_STRUCT_VERSION(size, ver) ((unsigned int)(size) | ((unsigned int)(ver) << 24U))
#define nvmlDeviceAddressingMode_v1 NVML_STRUCT_VERSION(sizeof(nvmlDeviceAddressingMode_t), 1)

/* Calls a scenario can make fail one by one: fail=utilization:not_supported,mig:no_permission */
enum {
    CALL_NAME,
    CALL_UUID,
    CALL_MEMORY,
    CALL_UTILIZATION,
    CALL_MIG,
    CALL_COMPUTE,
    CALL_GRAPHICS,
    CALL_CC,
    CALL_LIMITS,
    CALL_ADDRESSING,
    CALL_COUNT
};
static const char *call_names[CALL_COUNT] = {"name",    "uuid",     "memory", "utilization", "mig",
                                             "compute", "graphics", "cc",     "limits",      "addressing"};

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
    unsigned int gi, ci; /* a MIG device's GPU and compute instance ids */
    unsigned int addressing; /* nvmlDeviceGetAddressingMode: 0 none, 1 HMM, 2 ATS */
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

/* A driver-enforced memory limit: `limit gpu= cgroup= soft= hard= [used=]`. */
typedef struct {
    int gpu;
    char cgroup[MAX_PATH]; /* relative to the cgroup2 root, as /proc/<pid>/cgroup's 0:: line shows it */
    unsigned long long soft, hard, used;
    int has_used;
} limit_t;

/* Handles are pointers into these arrays, so they stay valid across scenario reloads. */
static device_t gpus[MAX_GPUS];
static device_t migs[MAX_GPUS][MAX_MIG];
static process_t procs[MAX_PROCS];
static limit_t limits[MAX_LIMITS];
static int gpu_count, proc_count, limit_count;
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

/* "5927MiB", "11.2GiB", "4GB", "1048576" (bytes), "na" (not available) or "max" (a limit's "none"). */
static unsigned long long parse_bytes(const char *text) {
    char *end;
    double value;
    if (strcmp(text, "na") == 0) return NVML_VALUE_NOT_AVAILABLE_ULL;
    if (strcmp(text, "max") == 0) return NVML_DEVICE_MEMORY_LIMIT_MAX;
    if (text[0] >= '0' && text[0] <= '9' && text[strspn(text, "0123456789")] == '\0') return strtoull(text, NULL, 10);
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
    else if (strcmp(key, "gi") == 0) dev->gi = (unsigned int)strtoul(value, NULL, 10);
    else if (strcmp(key, "ci") == 0) dev->ci = (unsigned int)strtoul(value, NULL, 10);
    else if (strcmp(key, "addressing") == 0)
        dev->addressing = strcmp(value, "hmm") == 0 ? 1 : strcmp(value, "ats") == 0 ? 2 : (unsigned int)strtoul(value, NULL, 10);
}

/* A cgroup path as one string: "/" first, no "//", no "/" last, no "." or ".." part. 0 when it is not one. */
static int normalize_cgroup(const char *in, char *out, size_t size) {
    size_t n = 0;
    if (!in || in[0] != '/' || size < 2) return 0;
    while (*in) {
        size_t part;
        while (*in == '/') in++;
        part = strcspn(in, "/");
        if (part == 0) break;
        if ((part == 1 && in[0] == '.') || (part == 2 && in[0] == '.' && in[1] == '.')) return 0;
        if (n + 1 + part + 1 > size) return 0;
        out[n++] = '/';
        memcpy(out + n, in, part);
        n += part;
        in += part;
    }
    if (n == 0) out[n++] = '/';
    out[n] = '\0';
    return 1;
}

static void parse_line(const char *line) {
    char kind[32], token[MAX_PATH + 64];
    const char *p = next_token(line, kind, sizeof kind);
    device_t *dev = NULL;
    process_t *proc = NULL;
    limit_t *lim = NULL;

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
    } else if (strcmp(kind, "limit") == 0 && limit_count < MAX_LIMITS) {
        lim = &limits[limit_count++];
        memset(lim, 0, sizeof *lim);
        lim->gpu = -1;
        lim->hard = NVML_DEVICE_MEMORY_LIMIT_MAX;
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
                    dev->gi = (unsigned int)slot + 1; /* unless gi= says otherwise */
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
        } else if (lim) {
            if (strcmp(key, "gpu") == 0) lim->gpu = atoi(value);
            else if (strcmp(key, "cgroup") == 0 && !normalize_cgroup(value, lim->cgroup, sizeof lim->cgroup))
                lim->cgroup[0] = '\0'; /* not a cgroup path: the line matches nothing */
            else if (strcmp(key, "soft") == 0) lim->soft = parse_bytes(value);
            else if (strcmp(key, "hard") == 0) lim->hard = parse_bytes(value);
            else if (strcmp(key, "used") == 0) {
                lim->used = parse_bytes(value);
                lim->has_used = 1;
            }
        }
    }
}

static void reset_scenario(void) {
    gpu_count = proc_count = limit_count = 0;
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
    char line[MAX_PATH + 1024];

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
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
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

static int driver_major(void) { return atoi(driver_version); }

/* Common checks for a per-device call that drivers have had since `since` (their major version; 0: always);
 * on success returns with the lock held. An older driver lacks the function: FUNCTION_NOT_FOUND, as pynvml
 * says when the symbol is missing. */
static nvmlReturn_t enter_since(device_t *dev, int call, int since) {
    nvmlReturn_t ret = NVML_SUCCESS;
    slow_down();
    pthread_mutex_lock(&lock);
    if (!init_count) ret = NVML_ERROR_UNINITIALIZED;
    else if (since && driver_major() < since) ret = NVML_ERROR_FUNCTION_NOT_FOUND;
    else if (!dev || !dev->present) ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (dev->lost || (dev->is_mig && gpus[dev->parent].lost)) ret = NVML_ERROR_GPU_IS_LOST;
    else if (dev->fail[call]) ret = dev->fail[call];
    if (ret != NVML_SUCCESS) pthread_mutex_unlock(&lock);
    return ret;
}

static nvmlReturn_t enter(device_t *dev, int call) { return enter_since(dev, call, 0); }

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

/* As nvml.h documents them: on a GPU's own handle the instance ids are NOT_SUPPORTED, and the parent of a handle
 * that is no MIG device handle an INVALID_ARGUMENT. */
EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(device_t *dev, unsigned int *is_mig) {
    nvmlReturn_t ret = enter(dev, CALL_MIG);
    if (ret != NVML_SUCCESS) return ret;
    if (!is_mig) return leave(NVML_ERROR_INVALID_ARGUMENT);
    *is_mig = (unsigned int)dev->is_mig;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(device_t *dev, unsigned int *id) {
    nvmlReturn_t ret = enter(dev, CALL_MIG);
    if (ret != NVML_SUCCESS) return ret;
    if (!id) return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!dev->is_mig) return leave(NVML_ERROR_NOT_SUPPORTED);
    *id = dev->gi;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(device_t *dev, unsigned int *id) {
    nvmlReturn_t ret = enter(dev, CALL_MIG);
    if (ret != NVML_SUCCESS) return ret;
    if (!id) return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!dev->is_mig) return leave(NVML_ERROR_NOT_SUPPORTED);
    *id = dev->ci;
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(device_t *mig, device_t **device) {
    nvmlReturn_t ret = enter(mig, CALL_MIG);
    if (ret != NVML_SUCCESS) return ret;
    if (!device || !mig->is_mig) return leave(NVML_ERROR_INVALID_ARGUMENT);
    *device = &gpus[mig->parent];
    return leave(NVML_SUCCESS);
}
#endif

/* Whether a process line belongs to a device: a GPU's own handle has all its processes; a MIG device handle
 * those of its GPU instance (memory is per GPU instance, its compute instances share it). */
static int runs_on(const device_t *dev, const process_t *proc, int graphics) {
    if (proc->graphics != graphics || !listed(proc)) return 0;
    if (dev->is_mig) return proc->gpu == dev->parent && proc->gi == dev->gi;
    return proc->gpu == dev->index;
}

/* The real two-call protocol: a first call with too small a buffer returns INSUFFICIENT_SIZE
 * and the number needed; a call with room fills the array and sets the count. */
static nvmlReturn_t running_processes(device_t *dev, int graphics, unsigned int *count, nvmlProcessInfo_t *infos) {
    nvmlReturn_t ret = enter(dev, graphics ? CALL_GRAPHICS : CALL_COMPUTE);
    unsigned int found = 0;
    int mig_mode;
    if (ret != NVML_SUCCESS) return ret;
    if (!count) return leave(NVML_ERROR_INVALID_ARGUMENT);
    mig_mode = dev->is_mig ? 1 : dev->mig_mode; /* gi/ci are N/A unless the GPU is in MIG mode */
    for (int i = 0; i < proc_count; i++)
        if (runs_on(dev, &procs[i], graphics)) found++;
    if (found > *count || (found > 0 && !infos)) {
        *count = found;
        return leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    *count = 0;
    for (int i = 0; i < proc_count; i++) {
        if (!runs_on(dev, &procs[i], graphics)) continue;
        infos[*count].pid = pid_of(&procs[i]);
        infos[*count].usedGpuMemory = procs[i].used;
        infos[*count].gpuInstanceId = mig_mode == 1 ? procs[i].gi : 0xFFFFFFFFu;
        infos[*count].computeInstanceId = mig_mode == 1 ? procs[i].ci : 0xFFFFFFFFu;
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

/* ---------------------------------------------------------------- driver-enforced memory limits (615) */

/* Where the cgroup v2 hierarchy is mounted: the first `cgroup2` line of /proc/self/mountinfo (/sys/fs/cgroup on a
 * pure v2 host, /sys/fs/cgroup/unified on a hybrid one). 0 when there is none. */
static int cgroup2_mount(char *out, size_t size) {
    size_t length;
    char *text = slurp("/proc/self/mountinfo", &length), *line, *next;
    int found = 0;
    if (!text) return 0;
    for (line = text; line && *line && !found; line = next) {
        char *fields[5], *dash, *type, *saved = NULL;
        size_t type_length, o = 0;
        int n = 0;
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        dash = strstr(line, " - ");
        if (!dash) continue;
        type = dash + 3;
        type_length = strcspn(type, " ");
        if (type_length != strlen("cgroup2") || strncmp(type, "cgroup2", type_length) != 0) continue;
        *dash = '\0';
        for (char *word = strtok_r(line, " ", &saved); word && n < 5; word = strtok_r(NULL, " ", &saved))
            fields[n++] = word;
        if (n < 5) continue;
        /* The mount point, with mountinfo's octal escapes (\040 for a space) undone. */
        for (const char *c = fields[4]; *c && o + 1 < size; c++) {
            if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] >= '0' && c[2] <= '7' && c[3] >= '0' && c[3] <= '7') {
                out[o++] = (char)((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
                c += 3;
            } else {
                out[o++] = *c;
            }
        }
        out[o] = '\0';
        found = 1;
    }
    free(text);
    return found;
}

/* A limit's nameSpace (the absolute path of a cgroup v2 directory) as the path below the cgroup2 root. */
static nvmlReturn_t cgroup_of_namespace(const char *name_space, char *rel, size_t size) {
    char path[MAX_PATH], mount[MAX_PATH], root[MAX_PATH];
    size_t n;
    struct stat st;
    if (!name_space || name_space[0] != '/' || !normalize_cgroup(name_space, path, sizeof path))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!cgroup2_mount(mount, sizeof mount) || !normalize_cgroup(mount, root, sizeof root))
        return NVML_ERROR_NOT_SUPPORTED; /* no cgroup v2 hierarchy on this host */
    n = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (strncmp(path, root, n) != 0 || (path[n] != '\0' && path[n] != '/')) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(rel, size, "%s", path[n] ? path + n : "/");
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return NVML_ERROR_NOT_FOUND;
    return NVML_SUCCESS;
}

/* Whether a process is in the cgroup `rel` or below it, by the 0:: line of /proc/<pid>/cgroup. */
static int in_cgroup(unsigned int pid, const char *rel) {
    char path[64];
    size_t length, n = strlen(rel);
    char *text, *line;
    int inside = 0;
    snprintf(path, sizeof path, "/proc/%u/cgroup", pid);
    if (!(text = slurp(path, &length))) return 0;
    for (line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "0::", 3) != 0) continue;
        line += 3;
        line[strcspn(line, "\n")] = '\0';
        inside = strcmp(rel, "/") == 0 ||
                 (strncmp(line, rel, n) == 0 && (line[n] == '\0' || line[n] == '/'));
        break;
    }
    free(text);
    return inside;
}

/* What a GPU's processes in the cgroup subtree use: each pid once (a process in both the compute and the graphics
 * list holds its memory once), N/A as 0. Call with the lock held. */
static unsigned long long used_in_cgroup(int gpu, const char *rel) {
    unsigned long long sum = 0;
    unsigned int *counted = malloc(sizeof *counted * (size_t)(proc_count ? proc_count : 1));
    int counted_n = 0;
    for (int i = 0; i < proc_count; i++) {
        unsigned int pid = pid_of(&procs[i]);
        int seen = 0;
        if (procs[i].gpu != gpu || !listed(&procs[i]) || pid == 0) continue;
        for (int c = 0; counted && c < counted_n && !seen; c++) seen = counted[c] == pid;
        if (seen || !in_cgroup(pid, rel)) continue;
        if (counted) counted[counted_n++] = pid;
        if (procs[i].used != NVML_VALUE_NOT_AVAILABLE_ULL) sum += procs[i].used;
    }
    free(counted);
    return sum;
}

static const limit_t *find_limit(int gpu, const char *rel) {
    for (int i = 0; i < limit_count; i++)
        if (limits[i].gpu == gpu && strcmp(limits[i].cgroup, rel) == 0) return &limits[i];
    return NULL;
}

/* Whether one line of the scenario is a `limit` line of this GPU and cgroup. */
static int is_limit_line(const char *line, size_t length, int gpu, const char *rel) {
    char *copy = malloc(length + 1), word[MAX_PATH + 64], cgroup[MAX_PATH];
    const char *p;
    int line_gpu = -1, same_cgroup = 0;
    if (!copy) return 0;
    memcpy(copy, line, length);
    copy[length] = '\0';
    p = next_token(copy, word, sizeof word);
    if (strcmp(word, "limit") == 0) {
        while (*p) {
            p = next_token(p, word, sizeof word);
            if (strncmp(word, "gpu=", 4) == 0) line_gpu = atoi(word + 4);
            else if (strncmp(word, "cgroup=", 7) == 0)
                same_cgroup = normalize_cgroup(word + 7, cgroup, sizeof cgroup) && strcmp(cgroup, rel) == 0;
        }
    }
    free(copy);
    return line_gpu == gpu && same_cgroup;
}

static void write_size(FILE *out, const char *key, unsigned long long bytes) {
    if (bytes == NVML_DEVICE_MEMORY_LIMIT_MAX) fprintf(out, " %s=max", key);
    else fprintf(out, " %s=%llu", key, bytes);
}

static void write_limit_line(FILE *out, int gpu, const char *rel, unsigned long long soft, unsigned long long hard) {
    fprintf(out, "limit gpu=%d cgroup=", gpu);
    if (rel[strcspn(rel, " \t\"\\")]) { /* quoted, as next_token reads it back */
        fputc('"', out);
        for (const char *c = rel; *c; c++) {
            if (*c == '"' || *c == '\\') fputc('\\', out);
            fputc(*c, out);
        }
        fputc('"', out);
    } else {
        fputs(rel, out);
    }
    write_size(out, "soft", soft);
    write_size(out, "hard", hard);
    fputc('\n', out);
}

/* A Set: the scenario file rewritten with the new `limit` line in place of the old one (or without it, the limit
 * cleared), every other line kept byte for byte; written beside it and renamed over it, in the file's mode, so
 * that every process reading the scenario sees the whole old or the whole new file. A lock on the directory keeps
 * two processes setting limits at once from losing one. Call with the lock held. */
static nvmlReturn_t rewrite_limit(int gpu, const char *rel, unsigned long long soft, unsigned long long hard) {
    const char *path = scenario_path();
    char dir[MAX_PATH], temp[MAX_PATH + 64];
    const char *base;
    size_t length;
    char *text = NULL;
    struct stat st;
    int dir_fd, fd, written = 0, ok;
    int cleared = soft == 0 && hard == NVML_DEVICE_MEMORY_LIMIT_MAX;
    FILE *out;

    if (!path || strlen(path) >= sizeof dir) return NVML_ERROR_UNKNOWN;
    snprintf(dir, sizeof dir, "%s", path);
    if (strrchr(dir, '/')) {
        char *slash = strrchr(dir, '/');
        base = path + (slash - dir) + 1;
        if (slash == dir) slash[1] = '\0';
        else *slash = '\0';
    } else {
        base = path;
        snprintf(dir, sizeof dir, ".");
    }
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return NVML_ERROR_UNKNOWN;
    flock(dir_fd, LOCK_EX);
    if (stat(path, &st) != 0 || !(text = slurp(path, &length))) {
        close(dir_fd);
        return NVML_ERROR_UNKNOWN;
    }
    snprintf(temp, sizeof temp, "%s/.%s.XXXXXX", strcmp(dir, "/") == 0 ? "" : dir, base);
    fd = mkstemp(temp);
    if (fd < 0 || !(out = fdopen(fd, "w"))) {
        if (fd >= 0) {
            close(fd);
            unlink(temp);
        }
        free(text);
        close(dir_fd);
        return NVML_ERROR_UNKNOWN;
    }
    fchmod(fd, st.st_mode & 07777);
    if (fchown(fd, st.st_uid, st.st_gid) != 0) { /* only root may give it away; the mode is what matters */
    }
    for (size_t at = 0; at < length;) {
        const char *end = memchr(text + at, '\n', length - at);
        size_t line_length = end ? (size_t)(end - (text + at)) + 1 : length - at;
        if (is_limit_line(text + at, line_length, gpu, rel)) {
            if (!cleared && !written) write_limit_line(out, gpu, rel, soft, hard);
            written = 1;
        } else {
            fwrite(text + at, 1, line_length, out);
        }
        at += line_length;
    }
    if (!cleared && !written) {
        if (length && text[length - 1] != '\n') fputc('\n', out);
        write_limit_line(out, gpu, rel, soft, hard);
    }
    ok = fflush(out) == 0 && fsync(fd) == 0;
    ok = fclose(out) == 0 && ok;
    ok = ok && rename(temp, path) == 0;
    if (!ok) unlink(temp);
    free(text);
    flock(dir_fd, LOCK_UN);
    close(dir_fd);
    return ok ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

/* A limit of a cgroup on one GPU: a `limit` line's soft= and hard=, or none (0 and MAX); currentUsed from its
 * used= or what the GPU's processes in the cgroup and below it use. The scenario is read again first, so a limit
 * another process set shows at once. */
EXPORT nvmlReturn_t nvmlDeviceGetMemoryLimits_v1(device_t *dev, nvmlGetMemoryLimits_v1_t *limit) {
    char rel[MAX_PATH];
    const limit_t *line;
    nvmlReturn_t ret;
    pthread_mutex_lock(&lock);
    if (init_count) refresh_scenario();
    pthread_mutex_unlock(&lock);
    if ((ret = enter_since(dev, CALL_LIMITS, MEMORY_LIMITS_SINCE)) != NVML_SUCCESS) return ret;
    if (dev->is_mig) return leave(NVML_ERROR_NOT_SUPPORTED);
    if (!limit) return leave(NVML_ERROR_INVALID_ARGUMENT);
    if ((ret = cgroup_of_namespace(limit->nameSpace, rel, sizeof rel)) != NVML_SUCCESS) return leave(ret);
    line = find_limit(dev->index, rel);
    limit->softLimit = line ? line->soft : 0;
    limit->hardLimit = line ? line->hard : NVML_DEVICE_MEMORY_LIMIT_MAX;
    limit->currentUsed = line && line->has_used ? line->used : used_in_cgroup(dev->index, rel);
    return leave(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceSetMemoryLimits_v1(device_t *dev, nvmlSetMemoryLimits_v1_t *limit) {
    char rel[MAX_PATH];
    nvmlReturn_t ret = enter_since(dev, CALL_LIMITS, MEMORY_LIMITS_SINCE);
    if (ret != NVML_SUCCESS) return ret;
    if (dev->is_mig) return leave(NVML_ERROR_NOT_SUPPORTED);
    if (!limit) return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (geteuid() != 0) return leave(NVML_ERROR_NO_PERMISSION);
    if ((ret = cgroup_of_namespace(limit->nameSpace, rel, sizeof rel)) != NVML_SUCCESS) return leave(ret);
    if (limit->softLimit > limit->hardLimit) return leave(NVML_ERROR_INVALID_ARGUMENT);
    ret = rewrite_limit(dev->index, rel, limit->softLimit, limit->hardLimit);
    if (ret == NVML_SUCCESS) refresh_scenario();
    return leave(ret);
}

/* ---------------------------------------------------------------- addressing mode (580) */

/* A `gpu` line's addressing=; a MIG device handle answers its GPU's. Turing (7.5) or newer, as nvml.h says. */
EXPORT nvmlReturn_t nvmlDeviceGetAddressingMode(device_t *dev, nvmlDeviceAddressingMode_t *mode) {
    const device_t *gpu;
    nvmlReturn_t ret = enter_since(dev, CALL_ADDRESSING, ADDRESSING_MODE_SINCE);
    if (ret != NVML_SUCCESS) return ret;
    if (!mode) return leave(NVML_ERROR_INVALID_ARGUMENT);
    if (mode->version != nvmlDeviceAddressingMode_v1) return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    gpu = dev->is_mig ? &gpus[dev->parent] : dev;
    if (gpu->cc_major && (gpu->cc_major < 7 || (gpu->cc_major == 7 && gpu->cc_minor < 5)))
        return leave(NVML_ERROR_NOT_SUPPORTED);
    mode->value = gpu->addressing;
    return leave(NVML_SUCCESS);
}
