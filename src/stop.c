/* stop.c - the stopping signals as flags (stop.h). */
#include "stop.h"

#include <string.h>
#include <time.h>

volatile sig_atomic_t stop_signal;
volatile sig_atomic_t stop_forced;
static struct timespec g_first; /* written by the handler only, before stop_signal */

#define FORCE_WINDOW_S 2

static void on_stop(int sig)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe */
    if (!stop_signal) {
        g_first = now;
        stop_signal = sig;
    } else if (now.tv_sec - g_first.tv_sec <= FORCE_WINDOW_S) {
        stop_forced = 1;
    }
}

static const int stop_sigs[] = {SIGINT, SIGTERM, SIGHUP};

void stop_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop;
    for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
        sigaction(stop_sigs[i], &sa, NULL);
}

void stop_uninstall(void)
{
    for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
        signal(stop_sigs[i], SIG_DFL);
}
