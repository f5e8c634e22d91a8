/* fragscope C ABI: the BFC caching allocator, its traces and its OOM reports from C or any
 * language with a C FFI (Python ctypes, Rust, Go, ...). Link libfragscope.so
 * (CMake: fragscope::capi; pkg-config: fragscope).
 *
 *   fragscope_allocator* a = NULL;
 *   if (fragscope_create("backing=host,limit=1GiB", &a) != FRAGSCOPE_OK) {
 *     fprintf(stderr, "%s\n", fragscope_last_error());
 *   }
 *   void* p = NULL;
 *   fragscope_malloc(a, 1 << 20, 0, 0, &p);
 *   fragscope_free(a, p, 0);
 *   fragscope_destroy(a);
 *
 * Rules for every function:
 *   - Nothing throws across this boundary: every failure is a fragscope_status, and
 *     fragscope_last_error() then holds a one-line message (per thread, valid until this thread's
 *     next fragscope call).
 *   - A NULL or foreign handle (one that is not a live allocator; checked by a magic number, a best
 *     effort) or a NULL required pointer is FRAGSCOPE_ERROR_INVALID_ARGUMENT; nothing changes.
 *   - `device` is the index of a (virtual) device of the configuration: 0 unless the configuration
 *     has virtual_devices=... ; without virtual devices the number reports and traces give it (the
 *     CUDA ordinal of device=N) is accepted too. Any other is FRAGSCOPE_ERROR_INVALID_ARGUMENT.
 *   - Every function is thread-safe on one handle, except fragscope_destroy.
 */
#ifndef FRAGSCOPE_FRAGSCOPE_H_
#define FRAGSCOPE_FRAGSCOPE_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define FRAGSCOPE_API
#else
#define FRAGSCOPE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fragscope_status {
  FRAGSCOPE_OK = 0,
  FRAGSCOPE_ERROR_INVALID_ARGUMENT = 1, /* NULL or foreign handle, NULL pointer, bad device */
  FRAGSCOPE_ERROR_CONFIG = 2,           /* bad configuration string or value */
  FRAGSCOPE_ERROR_BACKING = 3,          /* the memory source failed (no GPU, mmap error, ...) */
  FRAGSCOPE_ERROR_OUT_OF_MEMORY = 4,    /* fragscope_last_oom_text/json explain it */
  FRAGSCOPE_ERROR_INVALID_FREE = 5,     /* a pointer this device does not hold, or a double free */
  FRAGSCOPE_ERROR_TRACE = 6,            /* the trace file cannot be created or written */
  FRAGSCOPE_ERROR_NO_OOM = 7,           /* fragscope_last_oom_*: this device had no OOM */
  FRAGSCOPE_ERROR_BUFFER_TOO_SMALL = 8, /* the text was cut; *needed says how much to pass */
  FRAGSCOPE_ERROR_INTERNAL = 9          /* a bug in fragscope; the message says what */
} fragscope_status;

typedef struct fragscope_allocator fragscope_allocator; /* opaque */

/* Current and peak statistics of one device (definitions as in docs/allocator.md).
 * struct_size lets the struct grow without breaking programs built against an older header: set
 * it to sizeof(fragscope_stats) before the call (FRAGSCOPE_STATS_INIT does). The library fills as
 * many bytes as both it and the caller know, sets struct_size to that many, and leaves the rest
 * untouched; a struct_size smaller than this first version is FRAGSCOPE_ERROR_INVALID_ARGUMENT.
 * Fields are only ever appended. */
typedef struct fragscope_stats {
  uint64_t struct_size;     /* in: sizeof(fragscope_stats); out: bytes filled */
  uint64_t in_use;          /* sum of rounded sizes of live allocations */
  uint64_t reserved;        /* sum of region sizes (mapped bytes of an expandable region) */
  uint64_t live_requested;  /* sum of requested sizes of live allocations (LOAD) */
  uint64_t allocations;     /* live allocations */
  uint64_t regions;
  uint64_t largest_free;    /* largest free chunk inside the regions */
  uint64_t limit;
  uint64_t peak_in_use;
  uint64_t peak_reserved;
  uint64_t peak_live_requested;
  uint64_t peak_allocations;
  uint64_t total_allocs;
  uint64_t total_frees;
  uint64_t total_ooms;
  double external_fragmentation; /* 1 - largest_free / (reserved - in_use); 0 when nothing free */
  double utilization;            /* in_use / reserved; 1 when nothing reserved */
  /* Appended (trace format 1.1): address space held (region sizes plus an expandable region's whole range,
   * mapped or not; >= reserved), current and peak. */
  uint64_t address_space;
  uint64_t peak_address_space;
} fragscope_stats;

/* fragscope_stats stats = FRAGSCOPE_STATS_INIT; (C99, C++20: a designated initializer) */
#define FRAGSCOPE_STATS_INIT {.struct_size = sizeof(fragscope_stats)}

/* "0.1.0" */
FRAGSCOPE_API const char* fragscope_version(void);
/* "ok", "invalid-argument", "config", "backing", "out-of-memory", "invalid-free", "trace",
 * "no-oom", "buffer-too-small", "internal"; "unknown" otherwise. */
FRAGSCOPE_API const char* fragscope_status_name(fragscope_status status);
/* The message of this thread's most recent failed call; "" when there was none. */
FRAGSCOPE_API const char* fragscope_last_error(void);

/* Creates an allocator from a configuration string ("backing=host,limit=1GiB"; "" means all
 * defaults; NULL means $FRAGSCOPE_ALLOC_CONF, else defaults). *out is NULL on failure. */
FRAGSCOPE_API fragscope_status fragscope_create(const char* conf, fragscope_allocator** out);
/* Closes the trace (if any) and gives every region back. NULL is allowed. Allocations still live
 * are released with their regions. */
FRAGSCOPE_API void fragscope_destroy(fragscope_allocator* allocator);

/* Number of (virtual) devices; 1 without virtual_devices. */
FRAGSCOPE_API fragscope_status fragscope_device_count(const fragscope_allocator* allocator,
                                                      int* out);
/* The configuration in canonical form, copied like fragscope_last_oom_text. */
FRAGSCOPE_API fragscope_status fragscope_describe_conf(const fragscope_allocator* allocator,
                                                       char* buffer, size_t capacity,
                                                       size_t* needed);

/* Allocates `size` bytes (0 takes the smallest unit) on `device` for `stream` (a cudaStream_t
 * cast to an integer; 0 is the default stream). *out is NULL on failure; an OOM is
 * FRAGSCOPE_ERROR_OUT_OF_MEMORY with the report's summary as the message. */
FRAGSCOPE_API fragscope_status fragscope_malloc(fragscope_allocator* allocator, uint64_t size,
                                                int device, uint64_t stream, void** out);
/* Same with a tag (a tensor or op name, recorded in the trace); tag may be NULL. */
FRAGSCOPE_API fragscope_status fragscope_malloc_tagged(fragscope_allocator* allocator,
                                                       uint64_t size, int device, uint64_t stream,
                                                       const char* tag, void** out);
/* Frees `ptr` on `device`. NULL is allowed and does nothing. A pointer the device does not hold
 * (never allocated, already freed, another device's) is FRAGSCOPE_ERROR_INVALID_FREE and changes
 * nothing. */
FRAGSCOPE_API fragscope_status fragscope_free(fragscope_allocator* allocator, void* ptr,
                                              int device);

/* Records every event of every device to the trace file `path` (.fst) from now on; the regions
 * already reserved are recorded first. A trace already attached is closed first. */
FRAGSCOPE_API fragscope_status fragscope_attach_trace(fragscope_allocator* allocator,
                                                      const char* path);
/* Writes buffered events to disk (the file stays open). No trace: does nothing. */
FRAGSCOPE_API fragscope_status fragscope_flush_trace(fragscope_allocator* allocator);
/* Stops recording and closes the file. No trace: does nothing. */
FRAGSCOPE_API fragscope_status fragscope_detach_trace(fragscope_allocator* allocator);
/* Records a marker ("step 12 begin", "backward") on `device`; without a trace, does nothing. */
FRAGSCOPE_API fragscope_status fragscope_mark(fragscope_allocator* allocator, int device,
                                              const char* name);

FRAGSCOPE_API fragscope_status fragscope_get_stats(const fragscope_allocator* allocator,
                                                   int device, fragscope_stats* out);

/* The report of `device`'s most recent OOM, as several lines of text (summary, numbers,
 * suggestion) or as one JSON object {"device", "request", "rounded", "limit", "reserved",
 * "in_use", "live_requested", "free_in_regions", "largest_free", "headroom", "chunk_count", "region_count",
 * "cause", "explanation", "suggestion"}. Copies at most `capacity` bytes including the final NUL
 * into `buffer` (which may be NULL when capacity is 0) and sets *needed (may be NULL) to the full
 * size including the NUL. FRAGSCOPE_ERROR_BUFFER_TOO_SMALL when the text was cut,
 * FRAGSCOPE_ERROR_NO_OOM when the device never ran out of memory. */
FRAGSCOPE_API fragscope_status fragscope_last_oom_text(const fragscope_allocator* allocator,
                                                       int device, char* buffer, size_t capacity,
                                                       size_t* needed);
FRAGSCOPE_API fragscope_status fragscope_last_oom_json(const fragscope_allocator* allocator,
                                                       int device, char* buffer, size_t capacity,
                                                       size_t* needed);

#ifdef __cplusplus
}
#endif

#endif /* FRAGSCOPE_FRAGSCOPE_H_ */
