/* gloo_shim.cc - ddptop's one C++ file: gloo_shim.h's C interface over
 * Debian's libgloo. Every gloo call is made here, inside a try block, and
 * every exception becomes a return code and a gloo_shim_error.
 *
 * Rendezvous: a rank makes its TCP device and transport context, a pair
 * for every peer, and one record of its pairs' addresses (a header naming
 * its rank and world, then one address per peer). The records are
 * exchanged (store keys or the caller's allgather), each pair connects to
 * the address its peer made for this rank, in rank order on every rank,
 * and the addresses stay, so that a failure's message (which names the
 * remote end as "[host]:port") can be turned into a rank.
 *
 * Point-to-point: gloo's TCP pair aborts the whole process when a message
 * is longer than the receive posted for it, so a send is two messages: its
 * length (8 bytes, always posted in full) and then its bytes; a receiver
 * that expected another length takes the bytes into a buffer of the sent
 * length, fails the call, and leaves the pair in step. */
#include "gloo_shim.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

using std::chrono::milliseconds;

namespace
{

/* Slots of point-to-point messages: above every slot gloo's collectives
 * build (a prefix byte under 0x10 and a tag) and every slot the algorithm
 * classes take (a counter from 0). */
constexpr uint64_t kSlotLength = 0xDDull << 56;
constexpr uint64_t kSlotBytes = kSlotLength + 1;

/* The algorithm classes' kept instances: at most this many, and this many
 * bytes of buffers, evicted oldest first (the same on every rank, since
 * every rank makes the same calls). */
constexpr size_t kKeepMax = 8;
constexpr size_t kKeepBytes = 256u << 20;

constexpr size_t kAddrMax = gloo::transport::Address::kMaxByteSize;

/* One rank's record in the rendezvous. */
struct RecordHeader {
    char magic[8]; /* "ddptopG1" */
    int32_t rank, world;
};
struct RecordAddr {
    uint32_t len;
    char bytes[kAddrMax];
};

size_t record_bytes(int world)
{
    return sizeof(RecordHeader) + (size_t)world * sizeof(RecordAddr);
}

/* gloo::Context's fields, filled by this rank's own rendezvous. */
class MeshContext : public gloo::Context
{
  public:
    MeshContext(int rank, int size) : gloo::Context(rank, size)
    {
    }
    void attach(const std::shared_ptr<gloo::transport::Device> &dev,
                const std::shared_ptr<gloo::transport::Context> &tc)
    {
        device_ = dev;
        transportContext_ = tc;
    }
};

/* An algorithm-class allreduce kept for its (algorithm, size, type). */
struct Kept {
    int algo;
    size_t n, es;
    gloo_add16_fn add16;
    std::vector<float> buf; /* n elements of es bytes */
    std::unique_ptr<gloo::ReductionFunction<uint16_t>> red16;
    std::unique_ptr<gloo::Algorithm> alg;
};

void set_msg(gloo_shim_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void set_msg(gloo_shim_error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
}

void clear(gloo_shim_error *e)
{
    e->peer = -1;
    e->timed_out = 0;
    e->unusable = 0;
    e->msg[0] = 0;
}

/* gloo's message without its "[./gloo/x.cc:NN] " prefixes. */
std::string strip_where(std::string m)
{
    for (;;) {
        if (m.empty() || m[0] != '[')
            return m;
        size_t end = m.find("] ");
        if (end == std::string::npos || m.find(".cc:") > end)
            return m;
        m.erase(0, end + 2);
    }
}

bool mentions_timeout(const std::string &m)
{
    std::string low(m);
    std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return (char)tolower(c); });
    return low.find("timed out") != std::string::npos || low.find("timeout") != std::string::npos;
}

} // namespace

struct gloo_store {
    std::string spec;
    std::string dir;                                   /* file: the folder */
    std::shared_ptr<gloo::rendezvous::HashStore> hash; /* mem */
};

struct gloo_shim {
    int rank, world;
    int64_t timeout_ms;
    std::shared_ptr<MeshContext> ctx;
    /* addr[r]: rank r's pairs' addresses as gloo prints them ("[ip]:port") */
    std::vector<std::vector<std::string>> addr;
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> send_len, send_bytes; /* [peer] */
    std::vector<uint64_t> len_out;                                                     /* [peer] */
    std::deque<Kept> kept;
    std::vector<float> scratch;
};

namespace
{

/* Fills e from exception x: the message, whether it is gloo's timeout,
 * and the rank whose address it names (else the only peer of 2). */
int fail(const gloo_shim *g, gloo_shim_error *e, const std::exception &x)
{
    std::string m = strip_where(x.what());
    snprintf(e->msg, sizeof(e->msg), "%s", m.c_str());
    e->timed_out = mentions_timeout(m);
    e->unusable = 1;
    e->peer = -1;
    /* every "[host]:port" in the message, matched whole */
    for (size_t at = m.find('['); g && at != std::string::npos && e->peer < 0; at = m.find('[', at + 1)) {
        size_t close = m.find("]:", at);
        if (close == std::string::npos)
            break;
        size_t end = close + 2;
        while (end < m.size() && isdigit((unsigned char)m[end]))
            end++;
        std::string token = m.substr(at, end - at);
        for (int r = 0; r < g->world && e->peer < 0; r++)
            if (r != g->rank && std::find(g->addr[r].begin(), g->addr[r].end(), token) != g->addr[r].end())
                e->peer = r;
    }
    if (g && e->peer < 0 && g->world == 2)
        e->peer = 1 - g->rank;
    return -1;
}

milliseconds ms_of(const gloo_shim *g, int64_t timeout_ms)
{
    return milliseconds(timeout_ms > 0 ? timeout_ms : g->timeout_ms);
}

/* gloo's file store, asked whether a key is there without waiting (its
 * wait times out in whole seconds only), and the file a key is in. */
class DirStore : public gloo::rendezvous::FileStore
{
  public:
    explicit DirStore(const std::string &dir) : gloo::rendezvous::FileStore(dir)
    {
    }
    bool has(const std::string &key)
    {
        return check({key});
    }
    std::string path_of(const std::string &key)
    {
        return objectPath(key);
    }
};

/* Whether key is in st, after at most about a millisecond. */
bool has_key(gloo::rendezvous::Store &st, DirStore *dir, const std::string &key)
{
    if (dir) {
        if (dir->has(key))
            return true;
        usleep(1000);
        return false;
    }
    try {
        st.wait({key}, milliseconds(1));
        return true;
    } catch (const gloo::IoException &) {
        return false;
    }
}

std::string key_of(const gloo_shim_spec *s, int r)
{
    return std::string(s->prefix ? s->prefix : "ddptop") + "/" + std::to_string(r);
}

/* The records of every rank through the store: set ours, wait for each
 * peer's until the deadline (naming every rank missing then), read them. */
int store_exchange(gloo::rendezvous::Store &st, DirStore *dir, const gloo_shim_spec *s, const std::string &where,
                   const std::vector<char> &mine, std::vector<char> &all, gloo_shim_error *e)
{
    st.set(key_of(s, s->rank), mine);
    auto deadline = std::chrono::steady_clock::now() + milliseconds(s->timeout_ms);
    std::vector<int> missing;
    for (int r = 0; r < s->world; r++)
        if (r != s->rank)
            missing.push_back(r);
    while (!missing.empty()) {
        if (has_key(st, dir, key_of(s, missing.front()))) {
            missing.erase(missing.begin());
        } else if (s->stopped && s->stopped(s->stopped_arg)) {
            set_msg(e, "the run was stopped while rank %d of %d had not come to the rendezvous (%s)", missing.front(),
                    s->world, where.c_str());
            e->peer = missing.front();
            return -1;
        } else if (std::chrono::steady_clock::now() >= deadline) {
            break;
        }
    }
    /* at the deadline, each one still missing asked once more */
    std::vector<int> absent;
    for (int r : missing)
        if (!has_key(st, dir, key_of(s, r)))
            absent.push_back(r);
    if (!absent.empty()) {
        std::string who;
        for (size_t i = 0; i < absent.size(); i++)
            who += (i ? ", " : "") + std::to_string(absent[i]);
        set_msg(e, "rank%s %s of %d did not come to the rendezvous (%s, keys %s/) within %.3g s",
                absent.size() > 1 ? "s" : "", who.c_str(), s->world, where.c_str(), s->prefix ? s->prefix : "ddptop",
                (double)s->timeout_ms / 1e3);
        e->peer = absent[0];
        e->timed_out = 1;
        return -1;
    }
    size_t rb = record_bytes(s->world);
    for (int r = 0; r < s->world; r++) {
        std::vector<char> v = r == s->rank ? mine : st.get(key_of(s, r));
        if (v.size() != rb) {
            set_msg(e, "rank %d's rendezvous key (%s, %s) holds %zu bytes, not %zu: a key of an earlier job?", r,
                    where.c_str(), key_of(s, r).c_str(), v.size(), rb);
            e->peer = r;
            return -1;
        }
        memcpy(all.data() + (size_t)r * rb, v.data(), rb);
    }
    return 0;
}

/* Checks every record's header: a record of another world or rank is a
 * key left over from an earlier job (a file store's folder not empty). */
int check_records(const gloo_shim_spec *s, const std::vector<char> &all, gloo_shim_error *e)
{
    size_t rb = record_bytes(s->world);
    for (int r = 0; r < s->world; r++) {
        RecordHeader h;
        memcpy(&h, all.data() + (size_t)r * rb, sizeof(h));
        if (memcmp(h.magic, "ddptopG1", 8) != 0 || h.rank != r || h.world != s->world) {
            set_msg(e,
                    "rank %d's rendezvous record is not this job's (it says rank %d of %d): a key of an earlier "
                    "job, in a store that should start empty?",
                    r, (int)h.rank, (int)h.world);
            e->peer = r;
            return -1;
        }
    }
    return 0;
}

RecordAddr addr_of(const std::vector<char> &all, int world, int r, int peer)
{
    RecordAddr a;
    memcpy(&a, all.data() + (size_t)r * record_bytes(world) + sizeof(RecordHeader) + (size_t)peer * sizeof(a),
           sizeof(a));
    return a;
}

int connect_world(gloo_shim *g, const gloo_shim_spec *s, gloo_shim_error *e)
{
    gloo::transport::tcp::attr at;
    if (s->iface && s->iface[0])
        at.iface = s->iface;
    else
        at.hostname = s->host && s->host[0] ? s->host : "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(at);
    auto tc = dev->createContext(s->rank, s->world);
    tc->setTimeout(milliseconds(g->timeout_ms));

    size_t rb = record_bytes(s->world);
    std::vector<char> mine(rb, 0), all(rb * (size_t)s->world, 0);
    RecordHeader h;
    memcpy(h.magic, "ddptopG1", 8);
    h.rank = s->rank;
    h.world = s->world;
    memcpy(mine.data(), &h, sizeof(h));
    for (int p = 0; p < s->world; p++) {
        if (p == s->rank)
            continue;
        std::vector<char> b = tc->createPair(p)->address().bytes();
        RecordAddr a = {};
        a.len = (uint32_t)std::min(b.size(), kAddrMax);
        memcpy(a.bytes, b.data(), a.len);
        memcpy(mine.data() + sizeof(h) + (size_t)p * sizeof(a), &a, sizeof(a));
    }

    /* a failed rendezvous takes its key away too, so that the next job in
     * the folder does not find this one's addresses */
    std::unique_ptr<DirStore> file;
    auto give_up = [&]() {
        if (file)
            unlink(file->path_of(key_of(s, s->rank)).c_str());
        return -1;
    };
    if (s->world > 1) {
        if (s->store) {
            gloo::rendezvous::Store *st = s->store->hash.get();
            if (!st)
                st = (file = std::make_unique<DirStore>(s->store->dir)).get();
            if (store_exchange(*st, file.get(), s, s->store->spec, mine, all, e) != 0)
                return give_up();
        } else {
            char err[sizeof(e->msg)] = "";
            if (s->allgather(s->allgather_arg, mine.data(), all.data(), rb, g->timeout_ms, err, sizeof(err)) != 0) {
                set_msg(e, "rendezvous: %s", err);
                return -1;
            }
        }
        if (check_records(s, all, e) != 0)
            return give_up();
    }

    g->addr.assign((size_t)s->world, {});
    for (int r = 0; r < s->world; r++)
        for (int p = 0; p < s->world && s->world > 1; p++) {
            RecordAddr a = addr_of(all, s->world, r, p);
            if (p != r && a.len)
                g->addr[r].push_back(gloo::transport::tcp::Address(std::vector<char>(a.bytes, a.bytes + a.len)).str());
        }
    for (int p = 0; p < s->world; p++) {
        if (p == s->rank)
            continue;
        RecordAddr a = addr_of(all, s->world, p, s->rank);
        try {
            tc->getPair(p)->connect(std::vector<char>(a.bytes, a.bytes + a.len));
        } catch (const std::exception &x) {
            fail(g, e, x);
            e->peer = p;
            std::string m = e->msg;
            set_msg(e, "connecting to rank %d: %s", p, m.c_str());
            return give_up();
        }
    }
    g->ctx->attach(dev, tc);
    if (file) {
        /* every rank has read every key once all are connected: each takes
         * its own away, and the folder is left as it was found */
        gloo::BarrierOptions b(g->ctx);
        b.setTimeout(milliseconds(g->timeout_ms));
        gloo::barrier(b);
        unlink(file->path_of(key_of(s, s->rank)).c_str());
    }
    return 0;
}

/* dst = a + b over n 16-bit values, for gloo's reduce callback (any of the
 * three may be the same buffer). */
void sum16(gloo_add16_fn add, void *dst, const void *a, const void *b, size_t n)
{
    uint16_t *d = static_cast<uint16_t *>(dst);
    if (d == a) {
        add(d, static_cast<const uint16_t *>(b), n);
    } else if (d == b) {
        add(d, static_cast<const uint16_t *>(a), n);
    } else {
        memcpy(d, a, n * sizeof(uint16_t));
        add(d, static_cast<const uint16_t *>(b), n);
    }
}

template <typename T>
std::unique_ptr<gloo::Algorithm> build(int algo, const std::shared_ptr<gloo::Context> &ctx, T *p, size_t n,
                                       const gloo::ReductionFunction<T> *fn)
{
    std::vector<T *> ptrs{p};
    if (algo == GLOO_SHIM_RING_CHUNKED)
        return std::make_unique<gloo::AllreduceRingChunked<T>>(ctx, ptrs, (int)n, fn);
    return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(ctx, ptrs, (int)n, fn);
}

/* The kept instance for (algo, n, type), built on a miss. */
Kept &kept_for(gloo_shim *g, int algo, size_t n, gloo_add16_fn add16)
{
    size_t es = add16 ? sizeof(uint16_t) : sizeof(float);
    for (Kept &k : g->kept)
        if (k.algo == algo && k.n == n && k.es == es && k.add16 == add16)
            return k;
    size_t bytes = 0;
    for (const Kept &k : g->kept)
        bytes += k.n * k.es;
    while (!g->kept.empty() && (g->kept.size() >= kKeepMax || bytes + n * es > kKeepBytes)) {
        bytes -= g->kept.front().n * g->kept.front().es;
        g->kept.pop_front();
    }
    g->kept.emplace_back();
    Kept &k = g->kept.back();
    k.algo = algo;
    k.n = n;
    k.es = es;
    k.add16 = add16;
    k.buf.assign((n * es + sizeof(float) - 1) / sizeof(float), 0.0f);
    try {
        if (add16) {
            k.red16 = std::make_unique<gloo::ReductionFunction<uint16_t>>(gloo::CUSTOM, add16);
            k.alg = build<uint16_t>(algo, g->ctx, reinterpret_cast<uint16_t *>(k.buf.data()), n, k.red16.get());
        } else {
            k.alg = build<float>(algo, g->ctx, k.buf.data(), n, gloo::ReductionFunction<float>::sum);
        }
    } catch (...) {
        g->kept.pop_back();
        throw;
    }
    return k;
}

float *scratch(gloo_shim *g, size_t n)
{
    if (g->scratch.size() < n)
        g->scratch.resize(n);
    return g->scratch.data();
}

} // namespace

extern "C" {

struct gloo_store *gloo_store_open(const char *spec, struct gloo_shim_error *e)
{
    clear(e);
    auto s = std::make_unique<gloo_store>();
    s->spec = spec ? spec : "";
    if (s->spec == "mem") {
        s->hash = std::make_shared<gloo::rendezvous::HashStore>();
        return s.release();
    }
    if (s->spec.rfind("file:", 0) == 0) {
        s->dir = s->spec.substr(5);
        struct stat st;
        if (s->dir.empty() || stat(s->dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
            access(s->dir.c_str(), W_OK | X_OK) != 0) {
            set_msg(e, "rendezvous %s: %s is not a writable folder", s->spec.c_str(),
                    s->dir.empty() ? "(no path)" : s->dir.c_str());
            return NULL;
        }
        return s.release();
    }
    set_msg(e, "unknown rendezvous '%s': expected file:DIR (gloo's file store) or mem", s->spec.c_str());
    return NULL;
}

void gloo_store_close(struct gloo_store *s)
{
    delete s;
}

struct gloo_shim *gloo_shim_create(const struct gloo_shim_spec *s, struct gloo_shim_error *e)
{
    clear(e);
    if (s->world < 1 || s->rank < 0 || s->rank >= s->world || (s->world > 1 && !s->store && !s->allgather)) {
        set_msg(e, "rank %d of %d, %s: not a gloo world", s->rank, s->world,
                s->store || s->allgather ? "with a rendezvous" : "without a rendezvous");
        return NULL;
    }
    std::unique_ptr<gloo_shim> g;
    try {
        g = std::make_unique<gloo_shim>();
        g->rank = s->rank;
        g->world = s->world;
        g->timeout_ms = s->timeout_ms > 0 ? s->timeout_ms : 300 * 1000;
        g->ctx = std::make_shared<MeshContext>(s->rank, s->world);
        g->ctx->setTimeout(milliseconds(g->timeout_ms));
        g->send_len.resize((size_t)s->world);
        g->send_bytes.resize((size_t)s->world);
        g->len_out.assign((size_t)s->world, 0);
        if (connect_world(g.get(), s, e) != 0)
            return NULL;
    } catch (const std::exception &x) {
        fail(g.get(), e, x);
        std::string m = e->msg;
        set_msg(e, "rendezvous of rank %d of %d: %s", s->rank, s->world, m.c_str());
        return NULL;
    }
    return g.release();
}

void gloo_shim_destroy(struct gloo_shim *g)
{
    if (!g)
        return;
    try {
        delete g; /* an algorithm class's destructor may throw */
    } catch (...) {
    }
}

int gloo_shim_allreduce(struct gloo_shim *g, int algo, void *buf, size_t n, gloo_add16_fn add16, uint32_t tag,
                        int64_t timeout_ms, struct gloo_shim_error *e)
{
    clear(e);
    if (n == 0 || g->world == 1)
        return 0;
    size_t es = add16 ? sizeof(uint16_t) : sizeof(float);
    try {
        if (algo == GLOO_SHIM_RING_CHUNKED || algo == GLOO_SHIM_HALVING_DOUBLING) {
            if (n > (size_t)INT32_MAX) { /* the classes count elements in an int */
                set_msg(e, "%zu elements: more than gloo's %s takes", n,
                        algo == GLOO_SHIM_RING_CHUNKED ? "AllreduceRingChunked" : "AllreduceHalvingDoubling");
                return -1;
            }
            Kept &k = kept_for(g, algo, n, add16);
            memcpy(k.buf.data(), buf, n * es);
            k.alg->run();
            memcpy(buf, k.buf.data(), n * es);
            return 0;
        }
        gloo::AllreduceOptions o(g->ctx);
        o.setAlgorithm(algo == GLOO_SHIM_BCUBE ? gloo::AllreduceOptions::Algorithm::BCUBE
                                               : gloo::AllreduceOptions::Algorithm::RING);
        o.setTag(tag);
        o.setTimeout(ms_of(g, timeout_ms));
        if (add16) {
            o.setOutput(static_cast<uint16_t *>(buf), n);
            o.setReduceFunction([add16](void *d, const void *a, const void *b, size_t k) { sum16(add16, d, a, b, k); });
        } else {
            o.setOutput(static_cast<float *>(buf), n);
            void (*sum)(void *, const void *, const void *, size_t) = &gloo::sum<float>;
            o.setReduceFunction(sum);
        }
        gloo::allreduce(o);
    } catch (const std::exception &x) {
        return fail(g, e, x);
    }
    return 0;
}

int gloo_shim_broadcast(struct gloo_shim *g, float *buf, size_t n, int root, uint32_t tag, int64_t timeout_ms,
                        struct gloo_shim_error *e)
{
    clear(e);
    if (n == 0 || g->world == 1)
        return 0;
    try {
        gloo::BroadcastOptions o(g->ctx);
        o.setOutput(buf, n);
        o.setRoot(root);
        o.setTag(tag);
        o.setTimeout(ms_of(g, timeout_ms));
        gloo::broadcast(o);
    } catch (const std::exception &x) {
        return fail(g, e, x);
    }
    return 0;
}

int gloo_shim_reduce(struct gloo_shim *g, const float *in, float *out, size_t n, int root, uint32_t tag,
                     int64_t timeout_ms, struct gloo_shim_error *e)
{
    clear(e);
    if (n == 0)
        return 0;
    try {
        /* in place on the root's out, or on a copy elsewhere (gloo works in
         * the buffer it is given) */
        float *work = g->rank == root ? out : scratch(g, n);
        if (work != in)
            memcpy(work, in, n * sizeof(float));
        if (g->world == 1)
            return 0;
        gloo::ReduceOptions o(g->ctx);
        o.setOutput(work, n);
        o.setRoot(root);
        o.setTag(tag);
        o.setTimeout(ms_of(g, timeout_ms));
        void (*sum)(void *, const void *, const void *, size_t) = &gloo::sum<float>;
        o.setReduceFunction(sum);
        gloo::reduce(o);
    } catch (const std::exception &x) {
        return fail(g, e, x);
    }
    return 0;
}

int gloo_shim_gather(struct gloo_shim *g, const float *in, float *out, size_t n, int root, uint32_t tag,
                     int64_t timeout_ms, struct gloo_shim_error *e)
{
    clear(e);
    if (n == 0)
        return 0;
    try {
        const float *src = in;
        if (g->rank == root && in == out + (size_t)root * n) /* in place: gloo copies it over itself */
            src = static_cast<const float *>(memcpy(scratch(g, n), in, n * sizeof(float)));
        if (g->world == 1) {
            memmove(out, src, n * sizeof(float));
            return 0;
        }
        gloo::GatherOptions o(g->ctx);
        o.setInput(const_cast<float *>(src), n);
        if (g->rank == root)
            o.setOutput(out, n * (size_t)g->world);
        o.setRoot(root);
        o.setTag(tag);
        o.setTimeout(ms_of(g, timeout_ms));
        gloo::gather(o);
    } catch (const std::exception &x) {
        return fail(g, e, x);
    }
    return 0;
}

int gloo_shim_scatter(struct gloo_shim *g, const float *in, float *out, size_t n, int root, uint32_t tag,
                      int64_t timeout_ms, struct gloo_shim_error *e)
{
    clear(e);
    if (n == 0)
        return 0;
    try {
        if (g->world == 1) {
            memmove(out, in, n * sizeof(float));
            return 0;
        }
        gloo::ScatterOptions o(g->ctx);
        std::vector<float *> parts;
        if (g->rank == root)
            for (int r = 0; r < g->world; r++)
                parts.push_back(const_cast<float *>(in) + (size_t)r * n);
        /* the root's own part in place: received aside, it is already there */
        float *dst = g->rank == root && out == in + (size_t)root * n ? scratch(g, n) : out;
        if (g->rank == root)
            o.setInputs(parts, n);
        o.setOutput(dst, n);
        o.setRoot(root);
        o.setTag(tag);
        o.setTimeout(ms_of(g, timeout_ms));
        gloo::scatter(o);
    } catch (const std::exception &x) {
        return fail(g, e, x);
    }
    return 0;
}

int gloo_shim_allgather(struct gloo_shim *g, const float *in, float *out, size_t n, uint32_t tag, int64_t timeout_ms,
                        struct gloo_shim_error *e)
{
    clear(e);
    if (n == 0)
        return 0;
    try {
        const float *src = in;
        if (in == out + (size_t)g->rank * n)
            src = static_cast<const float *>(memcpy(scratch(g, n), in, n * sizeof(float)));
        if (g->world == 1) {
            memmove(out, src, n * sizeof(float));
            return 0;
        }
        gloo::AllgatherOptions o(g->ctx);
        o.setInput(const_cast<float *>(src), n);
        o.setOutput(out, n * (size_t)g->world);
        o.setTag(tag);
        o.setTimeout(ms_of(g, timeout_ms));
        gloo::allgather(o);
    } catch (const std::exception &x) {
        return fail(g, e, x);
    }
    return 0;
}

int gloo_shim_barrier(struct gloo_shim *g, uint32_t tag, int64_t timeout_ms, struct gloo_shim_error *e)
{
    clear(e);
    if (g->world == 1)
        return 0;
    try {
        gloo::BarrierOptions o(g->ctx);
        o.setTag(tag);
        o.setTimeout(ms_of(g, timeout_ms));
        gloo::barrier(o);
    } catch (const std::exception &x) {
        return fail(g, e, x);
    }
    return 0;
}

int gloo_shim_send_post(struct gloo_shim *g, int peer, const void *buf, size_t bytes, struct gloo_shim_error *e)
{
    clear(e);
    if (g->send_len[(size_t)peer] || g->send_bytes[(size_t)peer]) {
        set_msg(e, "send to rank %d: the previous send was not waited for", peer);
        e->peer = peer;
        return -1;
    }
    try {
        g->len_out[(size_t)peer] = bytes;
        g->send_len[(size_t)peer] = g->ctx->createUnboundBuffer(&g->len_out[(size_t)peer], sizeof(uint64_t));
        g->send_len[(size_t)peer]->send(peer, kSlotLength);
        if (bytes) {
            g->send_bytes[(size_t)peer] = g->ctx->createUnboundBuffer(const_cast<void *>(buf), bytes);
            g->send_bytes[(size_t)peer]->send(peer, kSlotBytes);
        }
    } catch (const std::exception &x) {
        fail(g, e, x);
        e->peer = peer;
        return -1;
    }
    return 0;
}

int gloo_shim_send_wait(struct gloo_shim *g, int peer, int64_t timeout_ms, struct gloo_shim_error *e)
{
    clear(e);
    try {
        for (auto *b : {&g->send_len[(size_t)peer], &g->send_bytes[(size_t)peer]}) {
            if (*b)
                (*b)->waitSend(ms_of(g, timeout_ms));
            b->reset();
        }
    } catch (const std::exception &x) {
        fail(g, e, x);
        e->peer = peer;
        return -1;
    }
    return 0;
}

int gloo_shim_recv(struct gloo_shim *g, int peer, void *buf, size_t bytes, int64_t timeout_ms,
                   struct gloo_shim_error *e)
{
    clear(e);
    try {
        uint64_t len = 0;
        auto lb = g->ctx->createUnboundBuffer(&len, sizeof(len));
        lb->recv(peer, kSlotLength);
        lb->waitRecv(ms_of(g, timeout_ms));
        if (len == bytes) {
            if (bytes) {
                auto b = g->ctx->createUnboundBuffer(buf, bytes);
                b->recv(peer, kSlotBytes);
                b->waitRecv(ms_of(g, timeout_ms));
            }
            return 0;
        }
        if (len) { /* taken aside, so the pair stays in step */
            std::vector<char> aside(len);
            auto b = g->ctx->createUnboundBuffer(aside.data(), len);
            b->recv(peer, kSlotBytes);
            b->waitRecv(ms_of(g, timeout_ms));
        }
        set_msg(e, "it sent %llu bytes where %zu were expected", (unsigned long long)len, bytes);
        e->peer = peer;
        return -1;
    } catch (const std::exception &x) {
        fail(g, e, x);
        e->peer = peer;
        return -1;
    }
}

} /* extern "C" */
