# A small seeded generator (splitmix64) owned by each solver run: same seed, same
# stream on every platform, no global state, safe without the GIL.
from libc.stdint cimport uint64_t


cdef inline uint64_t rng_next(uint64_t* state) noexcept nogil:
    state[0] += <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline double rng_uniform(uint64_t* state) noexcept nogil:
    """Uniform double in [0, 1)."""
    return (rng_next(state) >> 11) * (1.0 / 9007199254740992.0)


cdef inline int rng_below(uint64_t* state, int n) noexcept nogil:
    """Integer in [0, n), n >= 1 (multiply-shift; bias below 2^-32 for n < 2^31)."""
    return <int>(((rng_next(state) >> 32) * <uint64_t>n) >> 32)


cdef inline void rng_shuffle(uint64_t* state, int* a, int n) noexcept nogil:
    """Fisher-Yates shuffle of a[0:n]."""
    cdef int i, j, t
    for i in range(n - 1, 0, -1):
        j = rng_below(state, i + 1)
        t = a[i]
        a[i] = a[j]
        a[j] = t
