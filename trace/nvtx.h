/* nvtx.h - NVTX ranges around a rank's phases (data, forward, backward,
 * optimizer, each bucket's allreduce), so `nsys profile ddptop --batch ...`
 * shows ddptop's phases on each rank's thread ("rank N", "rank N comm").
 * Without NVTX these compile to nothing. */
#ifndef DDPTOP_NVTX_H
#define DDPTOP_NVTX_H

#ifdef DDPTOP_HAVE_NVTX
/* Call once before starting threads: NVTX's lazy first-call initialisation
 * must not race between rank threads. */
void nvtx_init(void);
void nvtx_name_thread(const char *name);
void nvtx_push(const char *what);
void nvtx_push_id(const char *what, int id);
void nvtx_pop(void);
#else
static inline void nvtx_init(void)
{
}
static inline void nvtx_name_thread(const char *name)
{
    (void)name;
}
static inline void nvtx_push(const char *what)
{
    (void)what;
}
static inline void nvtx_push_id(const char *what, int id)
{
    (void)what;
    (void)id;
}
static inline void nvtx_pop(void)
{
}
#endif

#endif
