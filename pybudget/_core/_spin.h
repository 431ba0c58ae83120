/* Hand-offs between the threads of a team that meet every few microseconds (a budgeted
   fit posts a job per kernel row): one thread publishes a counter, the others wait for
   it to change, and each answers in a flag of its own.  Waiting spins, then yields the
   core after PB_SPINS turns, so that a team sharing its cores with other work does not
   starve it.  (In separate runs with two OpenMP barriers per job instead, w8a's BSGD fit
   at B = 500 with its kernel rows on a team of 2 ran at 0.71-0.78x of one thread; with
   these flags, each on cache lines of its own, 1.37-1.42x.)  Release stores and acquire
   loads order the job's data around the flags. */
#ifndef PB_SPIN_H
#define PB_SPIN_H
#include "_clock.h"
#define PB_SPINS 4096

#ifdef _WIN32
#include <windows.h>
static inline void pb_store(volatile long* p, long v) { InterlockedExchange(p, v); }
static inline long pb_load(volatile long* p) { return InterlockedCompareExchange(p, 0, 0); }
static inline void pb_relax(void) { YieldProcessor(); }
static inline void pb_yield(void) { SwitchToThread(); }
#else
#include <sched.h>
static inline void pb_store(volatile long* p, long v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline long pb_load(volatile long* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
#if defined(__x86_64__) || defined(__i386__)
static inline void pb_relax(void) { __builtin_ia32_pause(); }
#elif defined(__aarch64__)
static inline void pb_relax(void) { __asm__ __volatile__("yield"); }
#else
static inline void pb_relax(void) { }
#endif
static inline void pb_yield(void) { sched_yield(); }
#endif

/* wait until *p != v; returns the new value */
static inline long pb_wait_change(volatile long* p, long v) {
    long now;
    int spins = 0;
    while ((now = pb_load(p)) == v) {
        if (++spins < PB_SPINS) pb_relax(); else pb_yield();
    }
    return now;
}

/* wait until *p == v; returns the seconds waited after the spinning (0 when the wait
   ended while spinning: the clock is read only once the spinning is over) */
static inline double pb_wait_for(volatile long* p, long v) {
    int spins = 0;
    double t0 = 0.0;
    while (pb_load(p) != v) {
        if (++spins < PB_SPINS) {
            pb_relax();
        } else {
            if (spins == PB_SPINS) t0 = pb_now();
            pb_yield();
        }
    }
    return spins >= PB_SPINS ? pb_now() - t0 : 0.0;
}
#endif
