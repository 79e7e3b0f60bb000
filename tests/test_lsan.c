/* test_lsan.c — the ASan stage of scripts/test.sh runs LeakSanitizer with tests/lsan.supp, which ignores
 * leaks allocated inside libgomp: on a loaded machine its thread pool was reported now and then at exit
 * ("Direct leak of 520 byte(s)": malloc called at libgomp.so.1+0xd09c, no frame of ours), and CI went
 * red for a leak that is not torrewave's. That race cannot be provoked on demand, so this program leaks
 * a block that libgomp allocates for certain, the same way: omp_alloc (its malloc is called inside
 * libgomp; omp_target_alloc's is a tail call, which leaves no libgomp frame), from a thread that has
 * ended, so that no stale copy of the pointer on a live stack keeps it reachable. Without the
 * suppression LeakSanitizer reports it at exit and the test fails. Skipped outside an ASan build with
 * OpenMP (nothing reports leaks there). */
#include <pthread.h>
#include <stdio.h>

#include "tw_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define TW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TW_ASAN 1
#endif
#endif

#if defined(TW_ASAN) && defined(_OPENMP)
#include <omp.h>

static void *leak_in_libgomp(void *arg) {
  *(int *)arg = omp_alloc(64, omp_default_mem_alloc) != NULL;
  return NULL;
}

int main(void) {
  int allocated = 0;
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, leak_in_libgomp, &allocated) == 0, "pthread_create");
  pthread_join(t, NULL);
  CHECK(allocated, "omp_alloc returned NULL");
  printf("a block allocated inside libgomp leaked: LeakSanitizer must not report it (LSAN_OPTIONS=%s)\n",
         getenv("LSAN_OPTIONS") ? getenv("LSAN_OPTIONS") : "");
  return tw_test_exit();
}
#else
int main(void) {
  TW_SKIP("not an ASan build with OpenMP: no LeakSanitizer to check (scripts/test.sh runs this in build-asan)");
}
#endif
