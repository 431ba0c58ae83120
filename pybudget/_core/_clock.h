/* Monotonic wall clock in seconds, usable without the GIL on every platform. */
#ifndef PB_CLOCK_H
#define PB_CLOCK_H
#ifdef _WIN32
#include <windows.h>
static double pb_now(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
}
#else
#include <time.h>
static double pb_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif
#endif
