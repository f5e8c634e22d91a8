/* fragscope from C: an allocator from a configuration string, a trace, a marker, stats and the
 * report of an OOM. Build: cc main.c $(pkg-config --cflags --libs fragscope) */
#include <stdio.h>

#include <fragscope/fragscope.h>

int main(int argc, char** argv) {
  const char* trace = argc > 1 ? argv[1] : "example-c.fst";
  fragscope_allocator* allocator = NULL;
  if (fragscope_create("backing=host,limit=64MiB", &allocator) != FRAGSCOPE_OK) {
    fprintf(stderr, "error: %s\n", fragscope_last_error());
    return 2;
  }
  if (fragscope_attach_trace(allocator, trace) != FRAGSCOPE_OK) {
    fprintf(stderr, "error: %s\n", fragscope_last_error());
    fragscope_destroy(allocator);
    return 2;
  }
  fragscope_mark(allocator, 0, "step 0 begin");

  void* weights = NULL;
  fragscope_malloc_tagged(allocator, 48u << 20, /*device=*/0, /*stream=*/0, "weights", &weights);
  void* too_much = NULL;
  if (fragscope_malloc(allocator, 32u << 20, 0, 0, &too_much) == FRAGSCOPE_ERROR_OUT_OF_MEMORY) {
    char report[4096];
    fragscope_last_oom_text(allocator, 0, report, sizeof report, NULL);  /* or _json */
    printf("%s", report);
  }
  fragscope_stats stats = FRAGSCOPE_STATS_INIT;
  fragscope_get_stats(allocator, 0, &stats);
  printf("in use %llu bytes, peak reserved %llu bytes, %llu OOM\n",
         (unsigned long long)stats.in_use, (unsigned long long)stats.peak_reserved,
         (unsigned long long)stats.total_ooms);

  fragscope_free(allocator, weights, 0);
  fragscope_destroy(allocator); /* closes the trace */
  return 0;
}
