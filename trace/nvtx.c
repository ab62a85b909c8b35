/* nvtx.c - NVTX ranges in ddptop's own domain. NVTX costs a few nanoseconds
 * per call when no profiler is attached. */
#include "nvtx.h"

#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static nvtxDomainHandle_t g_domain;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void make_domain(void)
{
    g_domain = nvtxDomainCreateA("ddptop");
}

static nvtxDomainHandle_t domain(void)
{
    pthread_once(&g_once, make_domain);
    return g_domain;
}

void nvtx_init(void)
{
    (void)domain();
}

void nvtx_name_thread(const char *name)
{
    (void)domain(); /* NVTX initialises itself on the first call: make that the once-only one */
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), name);
}

void nvtx_push(const char *what)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = what;
    nvtxDomainRangePushEx(domain(), &a);
}

void nvtx_push_id(const char *what, int id)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s %d", what, id);
    nvtx_push(buf);
}

void nvtx_pop(void)
{
    nvtxDomainRangePop(domain());
}
