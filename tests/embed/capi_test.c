/* The C ABI (fragscope/fragscope.h) from C: every function, every error path. Compiled as C11, so
 * the header is checked to be plain C. Exits 0 when every check passes; prints each failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "fragscope/fragscope.h"

static int failures = 0;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: '%s')\n", __FILE__,     \
              __LINE__, #cond, fragscope_last_error());                              \
      ++failures;                                                                    \
    }                                                                                \
  } while (0)

#define CHECK_STATUS(call, expected)                                                  \
  do {                                                                                \
    fragscope_status status_ = (call);                                                \
    if (status_ != (expected)) {                                                      \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: '%s')\n",     \
              __FILE__, __LINE__, #call, fragscope_status_name(status_),              \
              fragscope_status_name(expected), fragscope_last_error());               \
      ++failures;                                                                     \
    }                                                                                 \
  } while (0)

#define MiB (UINT64_C(1) << 20)

static int contains(const char* text, const char* part) { return strstr(text, part) != NULL; }

static void test_names(void) {
  CHECK(strcmp(fragscope_version(), "0.1.0") == 0);
  CHECK(strcmp(fragscope_status_name(FRAGSCOPE_OK), "ok") == 0);
  CHECK(strcmp(fragscope_status_name(FRAGSCOPE_ERROR_OUT_OF_MEMORY), "out-of-memory") == 0);
  CHECK(strcmp(fragscope_status_name(FRAGSCOPE_ERROR_INVALID_FREE), "invalid-free") == 0);
  CHECK(strcmp(fragscope_status_name((fragscope_status)99), "unknown") == 0);
}

static void test_bad_config(void) {
  fragscope_allocator* a = (fragscope_allocator*)&failures; /* must be reset to NULL */
  CHECK_STATUS(fragscope_create("backing=host,grwoth=on", &a), FRAGSCOPE_ERROR_CONFIG);
  CHECK(a == NULL);
  CHECK(contains(fragscope_last_error(), "grwoth"));
  CHECK(contains(fragscope_last_error(), "growth")); /* lists the valid keys */
  CHECK_STATUS(fragscope_create("backing=host,limit=lots", &a), FRAGSCOPE_ERROR_CONFIG);
  CHECK(contains(fragscope_last_error(), "limit"));
  CHECK_STATUS(fragscope_create("backing=sim,capacity=1GiB,limit=2GiB", &a), FRAGSCOPE_ERROR_CONFIG);
  CHECK(a == NULL);
  CHECK_STATUS(fragscope_create("backing=host", NULL), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
}

static void test_env_config(void) {
  fragscope_allocator* a = NULL;
  char conf[512];
  setenv("FRAGSCOPE_ALLOC_CONF", "backing=sim,capacity=4GiB,limit=1GiB", 1);
  CHECK_STATUS(fragscope_create(NULL, &a), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_describe_conf(a, conf, sizeof conf, NULL), FRAGSCOPE_OK);
  CHECK(contains(conf, "limit=1GiB"));
  fragscope_destroy(a);
  /* A string given explicitly wins over the environment ("" = all defaults). */
  CHECK_STATUS(fragscope_create("backing=sim,capacity=2GiB", &a), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_describe_conf(a, conf, sizeof conf, NULL), FRAGSCOPE_OK);
  CHECK(contains(conf, "capacity=2GiB"));
  fragscope_destroy(a);
  unsetenv("FRAGSCOPE_ALLOC_CONF");
}

static void test_alloc_free_stats(void) {
  fragscope_allocator* a = NULL;
  fragscope_stats s = FRAGSCOPE_STATS_INIT;
  void* p = NULL;
  void* q = NULL;
  int count = 0;
  CHECK_STATUS(fragscope_create("backing=host,limit=64MiB,growth=off", &a), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_device_count(a, &count), FRAGSCOPE_OK);
  CHECK(count == 1);
  CHECK_STATUS(fragscope_malloc(a, 1000, 0, 0, &p), FRAGSCOPE_OK);
  CHECK(p != NULL);
  memset(p, 0xab, 1000); /* host backing: real memory */
  CHECK_STATUS(fragscope_malloc_tagged(a, 3 * MiB, 0, 7, "activations", &q), FRAGSCOPE_OK);
  CHECK(q != NULL && q != p);
  CHECK_STATUS(fragscope_get_stats(a, 0, &s), FRAGSCOPE_OK);
  CHECK(s.allocations == 2);
  CHECK(s.live_requested == 1000 + 3 * MiB);
  CHECK(s.in_use == 1024 + 3 * MiB); /* rounded to 256 B */
  CHECK(s.limit == 64 * MiB);
  CHECK(s.reserved >= s.in_use);
  CHECK(s.total_allocs == 2 && s.total_frees == 0 && s.total_ooms == 0);
  CHECK(s.utilization > 0.0 && s.utilization <= 1.0);
  CHECK_STATUS(fragscope_free(a, q, 0), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_free(a, p, 0), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_free(a, NULL, 0), FRAGSCOPE_OK); /* like free(NULL) */
  CHECK_STATUS(fragscope_get_stats(a, 0, &s), FRAGSCOPE_OK);
  CHECK(s.allocations == 0 && s.in_use == 0 && s.live_requested == 0);
  CHECK(s.peak_live_requested == 1000 + 3 * MiB);
  CHECK(s.peak_allocations == 2);
  CHECK(s.total_frees == 2);
  fragscope_destroy(a);
}

static void test_invalid_free(void) {
  fragscope_allocator* a = NULL;
  fragscope_stats s = FRAGSCOPE_STATS_INIT;
  void* p = NULL;
  int local = 0;
  CHECK_STATUS(fragscope_create("backing=host,limit=16MiB", &a), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_malloc(a, 4096, 0, 0, &p), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_free(a, p, 0), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_free(a, p, 0), FRAGSCOPE_ERROR_INVALID_FREE); /* double free */
  CHECK(strlen(fragscope_last_error()) > 0);
  CHECK_STATUS(fragscope_free(a, &local, 0), FRAGSCOPE_ERROR_INVALID_FREE); /* never allocated */
  CHECK_STATUS(fragscope_get_stats(a, 0, &s), FRAGSCOPE_OK);
  CHECK(s.allocations == 0 && s.total_frees == 1); /* the state did not change */
  /* After errors the allocator still works. */
  CHECK_STATUS(fragscope_malloc(a, 4096, 0, 0, &p), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_free(a, p, 0), FRAGSCOPE_OK);
  fragscope_destroy(a);
}

static void test_oom(void) {
  fragscope_allocator* a = NULL;
  fragscope_stats s = FRAGSCOPE_STATS_INIT;
  void* big = NULL;
  void* p = (void*)&failures;
  char text[4096];
  char json[4096];
  char tiny[8];
  size_t needed = 0;
  CHECK_STATUS(fragscope_create("backing=host,limit=8MiB,growth=off", &a), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_last_oom_text(a, 0, text, sizeof text, &needed), FRAGSCOPE_ERROR_NO_OOM);
  CHECK_STATUS(fragscope_last_oom_json(a, 0, json, sizeof json, &needed), FRAGSCOPE_ERROR_NO_OOM);
  CHECK_STATUS(fragscope_malloc(a, 6 * MiB, 0, 0, &big), FRAGSCOPE_OK);
  /* 6 MiB live + 4 MiB > 8 MiB: capacity. */
  CHECK_STATUS(fragscope_malloc(a, 4 * MiB, 0, 0, &p), FRAGSCOPE_ERROR_OUT_OF_MEMORY);
  CHECK(p == NULL);
  CHECK(contains(fragscope_last_error(), "out of memory on device 0: capacity"));
  CHECK_STATUS(fragscope_last_oom_text(a, 0, text, sizeof text, &needed), FRAGSCOPE_OK);
  CHECK(needed == strlen(text) + 1);
  CHECK(contains(text, "out of memory on device 0: capacity"));
  CHECK(contains(text, "suggestion:"));
  CHECK(contains(text, "4.00 MiB")); /* the request */
  CHECK_STATUS(fragscope_last_oom_json(a, 0, json, sizeof json, &needed), FRAGSCOPE_OK);
  CHECK(contains(json, "\"cause\":\"capacity\""));
  CHECK(contains(json, "\"request\":4194304"));
  CHECK(contains(json, "\"limit\":8388608"));
  CHECK(contains(json, "\"in_use\":6291456"));
  CHECK(contains(json, "\"explanation\":"));
  /* Too small a buffer: cut, NUL-terminated, and the size needed. */
  CHECK_STATUS(fragscope_last_oom_json(a, 0, tiny, sizeof tiny, &needed),
               FRAGSCOPE_ERROR_BUFFER_TOO_SMALL);
  CHECK(needed == strlen(json) + 1);
  CHECK(strlen(tiny) == sizeof tiny - 1 && strncmp(tiny, json, sizeof tiny - 1) == 0);
  CHECK_STATUS(fragscope_last_oom_text(a, 0, NULL, 0, &needed), FRAGSCOPE_ERROR_BUFFER_TOO_SMALL);
  CHECK(needed == strlen(text) + 1);
  CHECK_STATUS(fragscope_last_oom_text(a, 0, NULL, 5, &needed), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  /* One request above the limit: request-too-large, and the last report is replaced. */
  CHECK_STATUS(fragscope_malloc(a, 9 * MiB, 0, 0, &p), FRAGSCOPE_ERROR_OUT_OF_MEMORY);
  CHECK_STATUS(fragscope_last_oom_json(a, 0, json, sizeof json, NULL), FRAGSCOPE_OK);
  CHECK(contains(json, "\"cause\":\"request-too-large\""));
  /* A size whose rounding would wrap (2^64 - 1, 2^64 - 255): refused, never an address that a
     later allocation also gets. */
  CHECK_STATUS(fragscope_malloc(a, UINT64_MAX, 0, 0, &p), FRAGSCOPE_ERROR_OUT_OF_MEMORY);
  CHECK(p == NULL);
  CHECK_STATUS(fragscope_last_oom_json(a, 0, json, sizeof json, NULL), FRAGSCOPE_OK);
  CHECK(contains(json, "\"cause\":\"request-too-large\""));
  CHECK(contains(json, "\"request\":18446744073709551615"));
  CHECK_STATUS(fragscope_malloc(a, UINT64_MAX - 254, 0, 0, &p), FRAGSCOPE_ERROR_OUT_OF_MEMORY);
  CHECK(contains(fragscope_last_error(), "request-too-large"));
  CHECK_STATUS(fragscope_get_stats(a, 0, &s), FRAGSCOPE_OK);
  CHECK(s.total_ooms == 4 && s.allocations == 1 && s.live_requested == 6 * MiB);
  CHECK_STATUS(fragscope_free(a, big, 0), FRAGSCOPE_OK);
  /* After the OOM the allocator is intact: the request now fits. */
  CHECK_STATUS(fragscope_malloc(a, 4 * MiB, 0, 0, &p), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_free(a, p, 0), FRAGSCOPE_OK);
  fragscope_destroy(a);
}

static void test_virtual_devices(void) {
  fragscope_allocator* a = NULL;
  fragscope_stats s = FRAGSCOPE_STATS_INIT;
  void* p = NULL;
  int count = 0;
  CHECK_STATUS(fragscope_create("backing=sim,capacity=8GiB,virtual_devices=2GiB+6GiB", &a),
               FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_device_count(a, &count), FRAGSCOPE_OK);
  CHECK(count == 2);
  CHECK_STATUS(fragscope_malloc(a, 3 * 1024 * MiB, 1, 0, &p), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_free(a, p, 0), FRAGSCOPE_ERROR_INVALID_FREE); /* another device's */
  CHECK_STATUS(fragscope_get_stats(a, 1, &s), FRAGSCOPE_OK);
  CHECK(s.limit == 6 * 1024 * MiB && s.allocations == 1);
  CHECK_STATUS(fragscope_free(a, p, 1), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_malloc(a, 1, 2, 0, &p), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK(contains(fragscope_last_error(), "device 2"));
  CHECK(p == NULL);
  fragscope_destroy(a);
}

static void test_bad_handle_and_null_args(void) {
  fragscope_allocator* a = NULL;
  fragscope_stats s = FRAGSCOPE_STATS_INIT;
  void* p = NULL;
  char buffer[64];
  int count = 0;
  /* Something that is not an allocator (its first bytes are not the magic number). */
  uint64_t not_an_allocator[8] = {0};
  fragscope_allocator* bogus = (fragscope_allocator*)not_an_allocator;

  CHECK_STATUS(fragscope_malloc(NULL, 16, 0, 0, &p), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK(contains(fragscope_last_error(), "NULL"));
  CHECK_STATUS(fragscope_malloc(bogus, 16, 0, 0, &p), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK(contains(fragscope_last_error(), "not a live fragscope allocator"));
  CHECK_STATUS(fragscope_malloc_tagged(NULL, 16, 0, 0, "x", &p), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_free(NULL, p, 0), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_free(bogus, p, 0), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_device_count(NULL, &count), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_describe_conf(NULL, buffer, sizeof buffer, NULL),
               FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_get_stats(NULL, 0, &s), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_get_stats(bogus, 0, &s), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_attach_trace(NULL, "x.fst"), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_flush_trace(NULL), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_detach_trace(bogus), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_mark(NULL, 0, "step"), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_last_oom_text(NULL, 0, buffer, sizeof buffer, NULL),
               FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_last_oom_json(bogus, 0, buffer, sizeof buffer, NULL),
               FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  fragscope_destroy(NULL);  /* allowed */
  fragscope_destroy(bogus); /* ignored: not an allocator */

  CHECK_STATUS(fragscope_create("backing=sim", &a), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_malloc(a, 16, 0, 0, NULL), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_malloc(a, 16, -1, 0, &p), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_free(a, p, 1), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_device_count(a, NULL), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_get_stats(a, 0, NULL), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_get_stats(a, 5, &s), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_attach_trace(a, NULL), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_attach_trace(a, ""), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_attach_trace(a, "/nonexistent-dir/x.fst"), FRAGSCOPE_ERROR_TRACE);
  CHECK(contains(fragscope_last_error(), "/nonexistent-dir/x.fst"));
  CHECK_STATUS(fragscope_mark(a, 0, NULL), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_mark(a, 3, "x"), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(fragscope_last_oom_text(a, 1, buffer, sizeof buffer, NULL),
               FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  /* Without a trace these do nothing, successfully. */
  CHECK_STATUS(fragscope_mark(a, 0, "no trace"), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_flush_trace(a), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_detach_trace(a), FRAGSCOPE_OK);
  fragscope_destroy(a);
}

/* One handle from four threads at once: every allocation and free lands, the counts add up. */
enum { kThreads = 4, kRounds = 500 };
static fragscope_allocator* shared_allocator = NULL;
static int thread_failures[kThreads];

static void* thread_body(void* arg) {
  const int t = (int)(intptr_t)arg;
  int i;
  for (i = 0; i < kRounds; ++i) {
    void* p = NULL;
    const uint64_t size = 256u * (uint64_t)(1 + (i * 7 + t) % 64);
    if (fragscope_malloc(shared_allocator, size, 0, (uint64_t)t, &p) != FRAGSCOPE_OK ||
        fragscope_free(shared_allocator, p, 0) != FRAGSCOPE_OK) {
      ++thread_failures[t];
    }
  }
  return NULL;
}

static void test_threads(void) {
  pthread_t threads[kThreads];
  fragscope_stats s = FRAGSCOPE_STATS_INIT;
  int t;
  CHECK_STATUS(fragscope_create("backing=host,limit=64MiB", &shared_allocator), FRAGSCOPE_OK);
  for (t = 0; t < kThreads; ++t) {
    CHECK(pthread_create(&threads[t], NULL, thread_body, (void*)(intptr_t)t) == 0);
  }
  for (t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    CHECK(thread_failures[t] == 0);
  }
  CHECK_STATUS(fragscope_get_stats(shared_allocator, 0, &s), FRAGSCOPE_OK);
  CHECK(s.total_allocs == kThreads * kRounds && s.total_frees == kThreads * kRounds);
  CHECK(s.allocations == 0 && s.in_use == 0);
  fragscope_destroy(shared_allocator);
}

/* Writes a trace to `path`; capi_trace.cmake reads it back with `fragscope report`. */
static void test_trace(const char* path) {
  fragscope_allocator* a = NULL;
  void* p = NULL;
  void* q = NULL;
  void* r = NULL;
  char second[1024];
  FILE* file = NULL;
  CHECK_STATUS(fragscope_create("backing=host,limit=8MiB,growth=off", &a), FRAGSCOPE_OK);
  /* Re-attaching closes the first file; detaching closes the second. */
  snprintf(second, sizeof second, "%s.second.fst", path);
  CHECK_STATUS(fragscope_attach_trace(a, second), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_attach_trace(a, path), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_detach_trace(a), FRAGSCOPE_OK);
  file = fopen(second, "rb");
  CHECK(file != NULL);
  if (file != NULL) fclose(file);
  unlink(second);
  /* Attached after a first allocation: the trace still starts complete (region and alloc). */
  CHECK_STATUS(fragscope_malloc(a, 1 * MiB, 0, 0, &p), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_attach_trace(a, path), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_mark(a, 0, "step 0 begin"), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_malloc_tagged(a, 2 * MiB, 0, 0, "layer1/activation", &q), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_flush_trace(a), FRAGSCOPE_OK);
  /* 1 + 2 + 6 MiB > 8 MiB: a capacity OOM, recorded in the trace. */
  CHECK_STATUS(fragscope_malloc(a, 6 * MiB, 0, 0, &r), FRAGSCOPE_ERROR_OUT_OF_MEMORY);
  CHECK_STATUS(fragscope_free(a, q, 0), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_free(a, p, 0), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_mark(a, 0, "step 0 end"), FRAGSCOPE_OK);
  fragscope_destroy(a); /* closes the trace */
}

/* struct_size: a caller built against an older header (a prefix), against a newer one (a larger
 * struct, whose unknown tail is left alone), and one that forgot to set it. */
static void test_stats_struct_size(void) {
  fragscope_allocator* a = NULL;
  void* p = NULL;
  struct newer {
    fragscope_stats known;
    uint64_t later_field;
  } newer;
  fragscope_stats unset;
  CHECK_STATUS(fragscope_create("backing=host,limit=16MiB", &a), FRAGSCOPE_OK);
  CHECK_STATUS(fragscope_malloc(a, 4096, 0, 0, &p), FRAGSCOPE_OK);

  memset(&newer, 0x5a, sizeof newer);
  newer.known.struct_size = sizeof newer;
  CHECK_STATUS(fragscope_get_stats(a, 0, &newer.known), FRAGSCOPE_OK);
  CHECK(newer.known.struct_size == sizeof(fragscope_stats)); /* what this library filled */
  CHECK(newer.known.allocations == 1 && newer.known.in_use == 4096);
  CHECK(newer.later_field == 0x5a5a5a5a5a5a5a5aull); /* untouched */

  memset(&unset, 0, sizeof unset); /* struct_size 0: not set */
  CHECK_STATUS(fragscope_get_stats(a, 0, &unset), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  CHECK(contains(fragscope_last_error(), "struct_size is 0"));
  CHECK(contains(fragscope_last_error(), "FRAGSCOPE_STATS_INIT"));
  CHECK(unset.allocations == 0); /* nothing written */
  /* Smaller than the first version (which ended at utilization): refused. */
  unset.struct_size = offsetof(fragscope_stats, utilization) + sizeof(double) - 8;
  CHECK_STATUS(fragscope_get_stats(a, 0, &unset), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  {
    /* The whole struct: address space held, >= reserved. The default pages on host: one 2 MiB
       page mapped under the 4 KiB block, in a range of four times the 16 MiB limit. */
    fragscope_stats full = FRAGSCOPE_STATS_INIT;
    CHECK_STATUS(fragscope_get_stats(a, 0, &full), FRAGSCOPE_OK);
    CHECK(full.reserved == 2097152u && full.address_space == 67108864u);
    CHECK(full.peak_address_space >= full.address_space);
    /* A caller built against the first version gets its prefix; the appended fields stay as they were. */
    memset(&unset, 0x5a, sizeof unset);
    unset.struct_size = offsetof(fragscope_stats, utilization) + sizeof(double);
    CHECK_STATUS(fragscope_get_stats(a, 0, &unset), FRAGSCOPE_OK);
    CHECK(unset.struct_size == offsetof(fragscope_stats, address_space));
    CHECK(unset.reserved == full.reserved);
    CHECK(unset.address_space == 0x5a5a5a5a5a5a5a5aull);
  }

  CHECK_STATUS(fragscope_free(a, p, 0), FRAGSCOPE_OK);
  fragscope_destroy(a);
}

int main(int argc, char** argv) {
  test_names();
  test_bad_config();
  test_env_config();
  test_alloc_free_stats();
  test_invalid_free();
  test_stats_struct_size();
  test_oom();
  test_virtual_devices();
  test_bad_handle_and_null_args();
  test_threads();
  if (argc > 1) test_trace(argv[1]);
  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("capi_test: all checks passed\n");
  return 0;
}
