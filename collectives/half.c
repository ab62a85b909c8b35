/* half.c - 16-bit conversions over whole buffers (half.h): binary16 on the F16C
 * instructions where the processor has them (every x86-64 with AVX2), else
 * one element at a time in C. Both round to nearest even, so the two give
 * the same bits for every finite value and infinity (a NaN stays a NaN). */
#include "half.h"

#include <stdatomic.h>
#include <stddef.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HALF_X86 1
#endif

static void to_half_c(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = half_from_float(src[i]);
}

static void to_float_c(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = half_to_float(src[i]);
}

static void add_c(uint16_t *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = half_from_float(half_to_float(dst[i]) + half_to_float(src[i]));
}

static void scale_c(uint16_t *x, size_t n, float f)
{
    for (size_t i = 0; i < n; i++)
        x[i] = half_from_float(half_to_float(x[i]) * f);
}

#ifdef HALF_X86
#define F16C __attribute__((target("avx,f16c")))
#define RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

F16C static void to_half_x86(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), RNE));
    to_half_c(dst + i, src + i, n - i);
}

F16C static void to_float_x86(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    to_float_c(dst + i, src + i, n - i);
}

F16C static void add_x86(uint16_t *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dst + i)));
        __m256 b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_add_ps(a, b), RNE));
    }
    add_c(dst + i, src + i, n - i);
}

F16C static void scale_x86(uint16_t *x, size_t n, float f)
{
    size_t i = 0;
    __m256 k = _mm256_set1_ps(f);
    for (; i + 8 <= n; i += 8) {
        __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
        _mm_storeu_si128((__m128i *)(x + i), _mm256_cvtps_ph(_mm256_mul_ps(a, k), RNE));
    }
    scale_c(x + i, n - i, f);
}

static int have_f16c(void)
{
    static _Atomic int known; /* 0: not asked yet; 1: no; 2: yes (every thread finds the same) */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        /* AVX from the compiler's check (it includes the OS's saving of
         * the ymm state); F16C from CPUID leaf 1, ECX bit 29 (clang 14
         * knows no "f16c" for __builtin_cpu_supports) */
        unsigned a, b, c, d;
        __builtin_cpu_init();
        k = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}
#endif

void half_from_floats(uint16_t *dst, const float *src, size_t n)
{
#ifdef HALF_X86
    if (have_f16c()) {
        to_half_x86(dst, src, n);
        return;
    }
#endif
    to_half_c(dst, src, n);
}

void half_to_floats(float *dst, const uint16_t *src, size_t n)
{
#ifdef HALF_X86
    if (have_f16c()) {
        to_float_x86(dst, src, n);
        return;
    }
#endif
    to_float_c(dst, src, n);
}

void half_add(uint16_t *dst, const uint16_t *src, size_t n)
{
#ifdef HALF_X86
    if (have_f16c()) {
        add_x86(dst, src, n);
        return;
    }
#endif
    add_c(dst, src, n);
}

void half_scale(uint16_t *x, size_t n, float f)
{
#ifdef HALF_X86
    if (have_f16c()) {
        scale_x86(x, n, f);
        return;
    }
#endif
    scale_c(x, n, f);
}

/* bfloat16: plain loops (the compiler vectorises the bit operations) */
void bf16_from_floats(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_from_float(src[i]);
}

void bf16_to_floats(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_to_float(src[i]);
}

void bf16_add(uint16_t *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_from_float(bf16_to_float(dst[i]) + bf16_to_float(src[i]));
}

void bf16_scale(uint16_t *x, size_t n, float f)
{
    for (size_t i = 0; i < n; i++)
        x[i] = bf16_from_float(bf16_to_float(x[i]) * f);
}

const char *w16_name(int fmt)
{
    return fmt == W16_BF16 ? "bf16" : "fp16";
}

void w16_from_floats(int fmt, uint16_t *dst, const float *src, size_t n)
{
    (fmt == W16_BF16 ? bf16_from_floats : half_from_floats)(dst, src, n);
}

void w16_to_floats(int fmt, float *dst, const uint16_t *src, size_t n)
{
    (fmt == W16_BF16 ? bf16_to_floats : half_to_floats)(dst, src, n);
}

void w16_add(int fmt, uint16_t *dst, const uint16_t *src, size_t n)
{
    (fmt == W16_BF16 ? bf16_add : half_add)(dst, src, n);
}

void w16_scale(int fmt, uint16_t *x, size_t n, float f)
{
    (fmt == W16_BF16 ? bf16_scale : half_scale)(x, n, f);
}
