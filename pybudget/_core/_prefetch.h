/* Software prefetch hint; a no-op where the compiler has no such builtin. */
#if defined(__GNUC__) || defined(__clang__)
#define PB_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
#define PB_PREFETCH_W(p) __builtin_prefetch((const void *)(p), 1, 3)
#else
#define PB_PREFETCH(p) ((void)0)
#define PB_PREFETCH_W(p) ((void)0)
#endif
