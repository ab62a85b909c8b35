/* half.h - 16-bit gradients on the wire (--grad-compress): IEEE 754
 * binary16 (fp16) and bfloat16 (bf16, fp32's top 16 bits: fp32's range,
 * 8 bits of mantissa), converted with rounding to nearest even; they travel
 * as 16 bits and are reduced in float. One value at a time here (the
 * reference), whole buffers in half.c (the hardware's conversions where
 * there are some). */
#ifndef DDPTOP_HALF_H
#define DDPTOP_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t fexp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (fexp == 0xffu) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int32_t exp = (int32_t)fexp - 127 + 15;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u); /* overflow: inf */
    if (exp <= 0) {                        /* subnormal half, or zero */
        if (exp < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* may carry into the exponent, which is still right */
    return (uint16_t)(sign | h);
}

static inline float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, x;
    if (exp == 0) {
        if (man == 0) {
            x = sign;
        } else { /* subnormal: normalise */
            uint32_t e = 127 - 15 + 1;
            while (!(man & 0x400u)) {
                man <<= 1;
                e--;
            }
            x = sign | (e << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (man << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static inline uint16_t bf16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* a NaN stays a (quiet) NaN */
    x += 0x7fffu + ((x >> 16) & 1u);          /* may carry into the exponent: inf past the largest */
    return (uint16_t)(x >> 16);
}

static inline float bf16_to_float(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* Buffers: dst[i] = src[i] converted; dst += src and x *= f in float,
 * rounded back to half. The same bits as the one-value functions. */
void half_from_floats(uint16_t *dst, const float *src, size_t n);
void half_to_floats(float *dst, const uint16_t *src, size_t n);
void half_add(uint16_t *dst, const uint16_t *src, size_t n);
void half_scale(uint16_t *x, size_t n, float f);
void bf16_from_floats(uint16_t *dst, const float *src, size_t n);
void bf16_to_floats(float *dst, const uint16_t *src, size_t n);
void bf16_add(uint16_t *dst, const uint16_t *src, size_t n);
void bf16_scale(uint16_t *x, size_t n, float f);

/* The format of 16-bit gradients (--grad-compress's values but none), and
 * the buffer functions above by format. */
enum wire16 { W16_FP16 = 1, W16_BF16 = 2 };
const char *w16_name(int fmt); /* "fp16", "bf16" */
void w16_from_floats(int fmt, uint16_t *dst, const float *src, size_t n);
void w16_to_floats(int fmt, float *dst, const uint16_t *src, size_t n);
void w16_add(int fmt, uint16_t *dst, const uint16_t *src, size_t n);
void w16_scale(int fmt, uint16_t *x, size_t n, float f);

#endif
