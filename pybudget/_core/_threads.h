/* The few OpenMP calls of the threaded solvers, with serial stand-ins where the
   extension is built without OpenMP (then a team has one thread). */
#ifndef PB_THREADS_H
#define PB_THREADS_H
#ifdef _OPENMP
#include <omp.h>
static inline int pb_openmp(void) { return 1; }
static inline int pb_thread_id(void) { return omp_get_thread_num(); }
static inline int pb_team_size(void) { return omp_get_num_threads(); }
static inline void pb_barrier(void) {
    #pragma omp barrier
}
#else
static inline int pb_openmp(void) { return 0; }
static inline int pb_thread_id(void) { return 0; }
static inline int pb_team_size(void) { return 1; }
static inline void pb_barrier(void) { }
#endif
#endif
