// gloo_plain.cc - gloo's allreduce as PyTorch's ProcessGroupGloo sets it
// up (rendezvous::Context's full mesh over a store, one TCP device on
// 127.0.0.1), without PyTorch and without ddptop, on 2 forked processes:
// the median and 10th percentile of 300 single calls (after 20) at 4 B,
// 2 KB, 128 KB and 256 KB, a new tag each call. The third reference beside
// `gloo_vs_shm 2 1 calls` (ddptop's communicator and its shim) and
// bench/gloo_path_ref.py (PyTorch's).
//   g++ -O2 -o gloo_plain bench/gloo_plain.cc -lgloo -lpthread && ./gloo_plain
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

static void run(int rank, const char *dir) {
  gloo::transport::tcp::attr at;
  at.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(at);
  gloo::rendezvous::FileStore fs(dir);
  gloo::rendezvous::PrefixStore ps("plain", fs);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, 2);
  ctx->connectFullMesh(ps, dev);
  uint32_t tag = 1;
  if (rank == 0) printf("gloo plain (rendezvous::Context), 2 processes:");
  for (size_t bytes : {4ul, 2048ul, 131072ul, 262144ul}) {
    std::vector<float> x(std::max<size_t>(1, bytes / 4), 1.0f);
    std::vector<double> took;
    for (int i = 0; i < 320; i++) {
      gloo::AllreduceOptions o(ctx);
      o.setOutput(x.data(), x.size());
      o.setTag(tag++);
      void (*sum)(void *, const void *, const void *, size_t) = &gloo::sum<float>;
      o.setReduceFunction(sum);
      double t0 = now();
      gloo::allreduce(o);
      if (i >= 20) took.push_back(now() - t0);
    }
    std::sort(took.begin(), took.end());
    if (rank == 0) printf("  %zu B median %.0f us (p10 %.0f)", bytes, took[took.size() / 2] * 1e6, took[took.size() / 10] * 1e6);
  }
  if (rank == 0) printf("\n");
  fflush(stdout);
}

int main() {
  char dir[] = "/tmp/gloo_plain.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  for (int r = 0; r < 2; r++)
    if (fork() == 0) { run(r, dir); _exit(0); }
  int st;
  while (wait(&st) > 0) {}
  char cmd[100]; snprintf(cmd, sizeof cmd, "rm -rf %s", dir); if (system(cmd)) {}
  return 0;
}
