// copy_latency.cu: latency and back-to-back throughput of cudaMemcpyAsync.
//
// Build (Hopper):  nvcc -O2 -arch=sm_90 -o copy_latency measure/copy_latency.cu
// Run:             ./copy_latency [--min 4] [--max 1073741824] [--step 2]
//                                 [--kinds h2d,d2h,both,d2d,p2p] [--driver 580.xx]
//                                 [--date YYYY-MM-DD] [--b2b-ms 20] [--lat-ms 100]
//                                 [--lat-max-reps 200] [--lat-min-reps 7] [--batches 3]
//
// For every size from --min to --max (multiplied by --step) and every kind it
// measures, with no Python or framework in the timed path:
//
//  * one-copy latency: an isolated copy on an idle stream, the device
//    synchronized before each repetition, timed two ways in two separate loops:
//      - latency_event_us: CUDA events recorded right before and right after the
//        copy on the same stream (GPU time between them; it includes the gap
//        while the driver submits the copy after the first event);
//      - latency_wall_us: host steady clock from the cudaMemcpyAsync call to the
//        return of cudaStreamSynchronize (no events in that loop);
//    each the median over `reps` repetitions;
//  * back-to-back: N copies queued on one stream between two events, N chosen
//    from a pilot so that one batch lasts about --b2b-ms; median of --batches
//    batches; b2b_per_copy_us = batch time / N, b2b_GBps = N*size/batch time
//    (GB = 1e9 bytes, one direction; for d2d and p2p the bytes copied once,
//    memory traffic is twice that).
//
// Kinds (columns kind, memory, direction):
//   h2d/d2h pinned one     host memory from cudaMallocHost
//   h2d/d2h pageable one   host memory from malloc (touched before timing)
//   h2d+d2h pinned both    one copy each way at once on two streams; one row per
//                          direction, each with its own events; latency_wall_us
//                          is the time until both are done (same in both rows)
//   d2d device one         within GPU 0
//   p2p device one/both    GPU0->GPU1 (kind p2p) and, for 'both', GPU1->GPU0
//                          (kind p2p_1to0) at the same time on two streams; only
//                          when two GPUs with peer access are visible; otherwise
//                          skipped with a note on stderr.
//
// Output: CSV on stdout with columns
//   gpu,driver,cuda_runtime,date,kind,memory,direction,size_bytes,
//   latency_event_us,latency_wall_us,b2b_per_copy_us,b2b_GBps,reps,
//   b2b_copies,b2b_batches
// Progress and notes go to stderr.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#define CK(call)                                                              \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), \
              __FILE__, __LINE__, #call);                                     \
      exit(2);                                                                \
    }                                                                         \
  } while (0)

namespace {

struct Options {
  size_t min_bytes = 4;
  size_t max_bytes = size_t(1) << 30;
  size_t step = 2;
  std::string kinds = "h2d,d2h,both,d2d,p2p";
  std::string driver;
  std::string date;
  double b2b_ms = 20.0;    // target duration of one back-to-back batch
  double lat_ms = 100.0;   // time budget of one latency loop
  int lat_max_reps = 200;
  int lat_min_reps = 7;
  int batches = 3;
};

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool has_kind(const Options& o, const char* k) {
  std::string s = "," + o.kinds + ",";
  return s.find(std::string(",") + k + ",") != std::string::npos;
}

std::string driver_version(const Options& o) {
  if (!o.driver.empty()) return o.driver;
  FILE* f = fopen("/proc/driver/nvidia/version", "r");
  if (f) {
    char line[512];
    std::string out;
    if (fgets(line, sizeof line, f)) {
      // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.xx.xx  <date>"
      const char* p = strstr(line, "Kernel Module");
      if (p) {
        p += strlen("Kernel Module");
        while (*p == ' ') ++p;
        const char* q = p;
        while (*q && *q != ' ' && *q != '\n') ++q;
        out.assign(p, q);
      }
    }
    fclose(f);
    if (!out.empty()) return out;
  }
  int v = 0;
  cudaDriverGetVersion(&v);
  char buf[64];
  snprintf(buf, sizeof buf, "cuda-driver-api-%d.%d", v / 1000, (v % 1000) / 10);
  return buf;
}

std::string today(const Options& o) {
  if (!o.date.empty()) return o.date;
  time_t t = time(nullptr);
  struct tm g;
  gmtime_r(&t, &g);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d", &g);
  return buf;
}

// One transfer: where it runs (device of its stream) and what it copies.
struct Xfer {
  const char* kind;    // h2d, d2h, d2d, p2p
  const char* memory;  // pinned, pageable, device
  void* dst;
  const void* src;
  cudaMemcpyKind dir;
  int device;          // device whose stream carries the copy
  cudaStream_t stream;
  cudaEvent_t ev0, ev1;
};

void issue(const Xfer& x, size_t n) {
  CK(cudaMemcpyAsync(x.dst, x.src, n, x.dir, x.stream));
}

void sync_all(const std::vector<Xfer*>& xs) {
  for (auto* x : xs) {
    CK(cudaSetDevice(x->device));
    CK(cudaDeviceSynchronize());
  }
}

struct Result {
  double lat_event_us = NAN, lat_wall_us = NAN, b2b_per_copy_us = NAN,
         b2b_GBps = NAN;
  int reps = 0, copies = 0, batches = 0;
};

// Measures a group of transfers issued together (one transfer: 'one'; two on
// two streams: 'both'). Returns one Result per transfer.
std::vector<Result> measure(const Options& o, std::vector<Xfer*> xs, size_t n) {
  std::vector<Result> res(xs.size());
  // warm-up: a few copies of this size, and an estimate of one copy's time
  for (int w = 0; w < 2; ++w) {
    for (auto* x : xs) issue(*x, n);
    sync_all(xs);
  }
  double t0 = now_us();
  for (auto* x : xs) issue(*x, n);
  for (auto* x : xs) CK(cudaStreamSynchronize(x->stream));
  double est_us = std::max(now_us() - t0, 1.0);
  int reps = int(o.lat_ms * 1000.0 / (est_us + 10.0));
  reps = std::max(o.lat_min_reps, std::min(o.lat_max_reps, reps));

  // 1a. latency with events around one copy
  std::vector<std::vector<double>> ev(xs.size());
  for (int r = 0; r < reps; ++r) {
    sync_all(xs);
    for (auto* x : xs) {
      CK(cudaSetDevice(x->device));
      CK(cudaEventRecord(x->ev0, x->stream));
    }
    for (auto* x : xs) {
      CK(cudaSetDevice(x->device));
      issue(*x, n);
      CK(cudaEventRecord(x->ev1, x->stream));
    }
    for (size_t i = 0; i < xs.size(); ++i) {
      CK(cudaStreamSynchronize(xs[i]->stream));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, xs[i]->ev0, xs[i]->ev1));
      ev[i].push_back(ms * 1000.0);
    }
  }
  // 1b. latency by host wall clock, call to synchronize return, no events
  std::vector<double> wall;
  for (int r = 0; r < reps; ++r) {
    sync_all(xs);
    CK(cudaSetDevice(xs[0]->device));
    double a = now_us();
    for (auto* x : xs) {
      if (xs.size() > 1) CK(cudaSetDevice(x->device));
      issue(*x, n);
    }
    for (auto* x : xs) CK(cudaStreamSynchronize(x->stream));
    wall.push_back(now_us() - a);
  }
  double lat_wall = median(wall);
  for (size_t i = 0; i < xs.size(); ++i) {
    res[i].lat_event_us = median(ev[i]);
    res[i].lat_wall_us = lat_wall;
    res[i].reps = reps;
  }

  // 2. back-to-back: pilot batch, then batches of N copies per stream
  auto batch = [&](int count, std::vector<double>& per_stream_us) {
    sync_all(xs);
    for (auto* x : xs) {
      CK(cudaSetDevice(x->device));
      CK(cudaEventRecord(x->ev0, x->stream));
    }
    for (int c = 0; c < count; ++c)
      for (auto* x : xs) {
        if (xs.size() > 1) CK(cudaSetDevice(x->device));
        issue(*x, n);
      }
    for (auto* x : xs) {
      CK(cudaSetDevice(x->device));
      CK(cudaEventRecord(x->ev1, x->stream));
    }
    per_stream_us.assign(xs.size(), 0.0);
    for (size_t i = 0; i < xs.size(); ++i) {
      CK(cudaStreamSynchronize(xs[i]->stream));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, xs[i]->ev0, xs[i]->ev1));
      per_stream_us[i] = ms * 1000.0;
    }
  };
  std::vector<double> pilot;
  const int n_pilot =
      std::max(2, std::min(8, int(o.b2b_ms * 1000.0 / est_us / 2.0)));
  batch(n_pilot, pilot);
  double per = *std::max_element(pilot.begin(), pilot.end()) / n_pilot;
  per = std::max(per, 0.2);
  long want = long(std::ceil(o.b2b_ms * 1000.0 / per));
  int count = int(std::max(2L, std::min(200000L, want)));
  std::vector<std::vector<double>> bt(xs.size());
  for (int b = 0; b < o.batches; ++b) {
    std::vector<double> us;
    batch(count, us);
    for (size_t i = 0; i < xs.size(); ++i) bt[i].push_back(us[i]);
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    double t = median(bt[i]);
    res[i].b2b_per_copy_us = t / count;
    res[i].b2b_GBps = double(n) * count / (t * 1e-6) / 1e9;
    res[i].copies = count;
    res[i].batches = o.batches;
  }
  CK(cudaSetDevice(0));
  return res;
}

void print_row(const std::string& gpu, const std::string& drv,
               const std::string& rt, const std::string& date, const Xfer& x,
               const char* direction, size_t n, const Result& r) {
  printf("%s,%s,%s,%s,%s,%s,%s,%zu,%.3f,%.3f,%.4f,%.4f,%d,%d,%d\n",
         gpu.c_str(), drv.c_str(), rt.c_str(), date.c_str(), x.kind, x.memory,
         direction, n, r.lat_event_us, r.lat_wall_us, r.b2b_per_copy_us,
         r.b2b_GBps, r.reps, r.copies, r.batches);
  fflush(stdout);
}

Xfer make(const char* kind, const char* memory, void* dst, const void* src,
          cudaMemcpyKind dir, int device) {
  Xfer x{kind, memory, dst, src, dir, device, nullptr, nullptr, nullptr};
  CK(cudaSetDevice(device));
  CK(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking));
  CK(cudaEventCreate(&x.ev0));
  CK(cudaEventCreate(&x.ev1));
  CK(cudaSetDevice(0));
  return x;
}

void usage() {
  fprintf(stderr,
          "usage: copy_latency [--min B] [--max B] [--step K] [--kinds LIST] "
          "[--driver V] [--date D] [--b2b-ms MS] [--lat-ms MS] "
          "[--lat-max-reps N] [--lat-min-reps N] [--batches N]\n");
  exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--min") o.min_bytes = strtoull(val(), nullptr, 10);
    else if (a == "--max") o.max_bytes = strtoull(val(), nullptr, 10);
    else if (a == "--step") o.step = strtoull(val(), nullptr, 10);
    else if (a == "--kinds") o.kinds = val();
    else if (a == "--driver") o.driver = val();
    else if (a == "--date") o.date = val();
    else if (a == "--b2b-ms") o.b2b_ms = atof(val());
    else if (a == "--lat-ms") o.lat_ms = atof(val());
    else if (a == "--lat-max-reps") o.lat_max_reps = atoi(val());
    else if (a == "--lat-min-reps") o.lat_min_reps = atoi(val());
    else if (a == "--batches") o.batches = atoi(val());
    else usage();
  }
  if (o.step < 2 || o.min_bytes < 1 || o.max_bytes < o.min_bytes) usage();

  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  if (ndev < 1) {
    fprintf(stderr, "no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::string gpu = prop.name;
  for (auto& c : gpu)
    if (c == ',') c = ' ';
  int rtv = 0;
  CK(cudaRuntimeGetVersion(&rtv));
  char rtbuf[32];
  snprintf(rtbuf, sizeof rtbuf, "%d.%d", rtv / 1000, (rtv % 1000) / 10);
  std::string rt = rtbuf, drv = driver_version(o), date = today(o);
  fprintf(stderr, "# %d GPU(s) visible; GPU0 %s, driver %s, CUDA runtime %s\n",
          ndev, gpu.c_str(), drv.c_str(), rt.c_str());

  const size_t cap = o.max_bytes;
  CK(cudaSetDevice(0));
  void *hp_a, *hp_b, *d_a, *d_b;
  CK(cudaMallocHost(&hp_a, cap));
  CK(cudaMallocHost(&hp_b, cap));
  CK(cudaMalloc(&d_a, cap));
  CK(cudaMalloc(&d_b, cap));
  void* pg_a = malloc(cap);
  void* pg_b = malloc(cap);
  if (!pg_a || !pg_b) {
    fprintf(stderr, "malloc of %zu bytes failed\n", cap);
    return 2;
  }
  // touch every page so that first-touch faults are not timed
  memset(hp_a, 1, cap);
  memset(hp_b, 2, cap);
  memset(pg_a, 3, cap);
  memset(pg_b, 4, cap);
  CK(cudaMemset(d_a, 5, cap));
  CK(cudaMemset(d_b, 6, cap));

  // peer-to-peer: GPU0 <-> GPU1 when possible
  bool p2p = false;
  void *d1_a = nullptr, *d1_b = nullptr;
  if (has_kind(o, "p2p")) {
    if (ndev < 2) {
      fprintf(stderr, "# p2p skipped: only %d GPU visible\n", ndev);
    } else {
      int can01 = 0, can10 = 0;
      CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
      CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
      if (!can01 || !can10) {
        fprintf(stderr, "# p2p skipped: no peer access between GPU0 and GPU1\n");
      } else {
        CK(cudaSetDevice(0));
        cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
        CK(cudaSetDevice(1));
        e = cudaDeviceEnablePeerAccess(0, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
        cudaGetLastError();
        CK(cudaMalloc(&d1_a, cap));
        CK(cudaMalloc(&d1_b, cap));
        CK(cudaMemset(d1_a, 7, cap));
        CK(cudaMemset(d1_b, 8, cap));
        CK(cudaSetDevice(0));
        p2p = true;
      }
    }
  }

  Xfer h2d_pin = make("h2d", "pinned", d_a, hp_a, cudaMemcpyHostToDevice, 0);
  Xfer d2h_pin = make("d2h", "pinned", hp_b, d_b, cudaMemcpyDeviceToHost, 0);
  Xfer h2d_pg = make("h2d", "pageable", d_a, pg_a, cudaMemcpyHostToDevice, 0);
  Xfer d2h_pg = make("d2h", "pageable", pg_b, d_b, cudaMemcpyDeviceToHost, 0);
  Xfer d2d = make("d2d", "device", d_b, d_a, cudaMemcpyDeviceToDevice, 0);
  Xfer p01{}, p10{};
  if (p2p) {
    p01 = make("p2p", "device", d1_a, d_a, cudaMemcpyDefault, 0);   // 0 -> 1
    p10 = make("p2p_1to0", "device", d_b, d1_b, cudaMemcpyDefault, 1);  // 1 -> 0
  }

  printf("gpu,driver,cuda_runtime,date,kind,memory,direction,size_bytes,"
         "latency_event_us,latency_wall_us,b2b_per_copy_us,b2b_GBps,reps,"
         "b2b_copies,b2b_batches\n");
  for (size_t n = o.min_bytes; n <= o.max_bytes; n *= o.step) {
    double t_size = now_us();
    if (has_kind(o, "h2d")) {
      for (Xfer* x : {&h2d_pin, &h2d_pg}) {
        auto r = measure(o, {x}, n);
        print_row(gpu, drv, rt, date, *x, "one", n, r[0]);
      }
    }
    if (has_kind(o, "d2h")) {
      for (Xfer* x : {&d2h_pin, &d2h_pg}) {
        auto r = measure(o, {x}, n);
        print_row(gpu, drv, rt, date, *x, "one", n, r[0]);
      }
    }
    if (has_kind(o, "both")) {
      auto r = measure(o, {&h2d_pin, &d2h_pin}, n);
      print_row(gpu, drv, rt, date, h2d_pin, "both", n, r[0]);
      print_row(gpu, drv, rt, date, d2h_pin, "both", n, r[1]);
    }
    if (has_kind(o, "d2d")) {
      auto r = measure(o, {&d2d}, n);
      print_row(gpu, drv, rt, date, d2d, "one", n, r[0]);
    }
    if (p2p) {
      auto r = measure(o, {&p01}, n);
      print_row(gpu, drv, rt, date, p01, "one", n, r[0]);
      r = measure(o, {&p01, &p10}, n);
      print_row(gpu, drv, rt, date, p01, "both", n, r[0]);
      print_row(gpu, drv, rt, date, p10, "both", n, r[1]);
    }
    fprintf(stderr, "# size %zu done in %.2f s\n", n, (now_us() - t_size) * 1e-6);
    if (n > o.max_bytes / o.step) break;  // no overflow past max
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
