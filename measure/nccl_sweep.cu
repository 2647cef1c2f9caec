// Collective sweep over NCCL from C++: no Python in the timed loop.
//
//   nvcc -O2 -o nccl_sweep measure/nccl_sweep.cu -I$NCCL/include -L$NCCL/lib -lnccl
//   ./nccl_sweep [-b 8] [-e 1073741824] [-f 2] [-w 5] [-n 20] [-g NGPUS] [-P 0|1] [-G 0|1] > out.csv
//
// -P 0 (default): one process drives all NGPUS GPUs, like nccl-tests with -g N.
// -P 1: one process per GPU (forked; the NCCL unique id goes through pipes), like
//       nccl-tests built with MPI and run as `mpirun -np N ... -g 1`.
// -G 1: capture the -n timed calls of every GPU in one CUDA graph per GPU and time its
//       replay, as nccl-tests -G: no host launch between calls, so a small call takes
//       the GPUs' own time (the kernels' fixed cost and their steps), not the host's.
// -g 1: one GPU, NCCL's one-rank path: only to try the harness on a one-GPU machine.
//
// Sizes, algbw and busbw follow nccl-tests' definitions (doc/PERFORMANCE.md):
// size is the full buffer of the collective; busbw = algbw * factor with
// all_reduce 2(n-1)/n, all_gather / reduce_scatter / alltoall (n-1)/n,
// sendrecv and broadcast 1. Time: mean over -n back-to-back calls after -w
// warm-ups, CUDA events on the first GPU of rank 0's process (with -P 0 after all
// GPUs joined; with -P 1 after a small all_reduce lined the processes up).
// float32 data; the all_reduce result is checked. CSV on stdout (rank 0), an
// nccl-tests-like table on stderr.
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CUDACHECK(cmd) do { cudaError_t err_ = cmd; if (err_ != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s:%d '%s'\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
  exit(1); } } while (0)
#define NCCLCHECK(cmd) do { ncclResult_t res_ = cmd; if (res_ != ncclSuccess) { \
  fprintf(stderr, "NCCL error %s:%d '%s'\n", __FILE__, __LINE__, ncclGetErrorString(res_)); \
  exit(1); } } while (0)

__global__ void fill(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

struct Opts { size_t minb = 8, maxb = 1 << 30; int factor = 2, warm = 5, iters = 20, ng = 0, graph = 0; };

// Runs the sweep for the GPUs `devs` (global ranks `ranks`) of an `nranks` job.
static int sweep(const Opts& o, const std::vector<int>& devs, const std::vector<int>& ranks,
                 std::vector<ncclComm_t>& comms, int nranks, bool print) {
  int nl = (int)devs.size();
  int ver; ncclGetVersion(&ver);
  std::vector<cudaStream_t> st(nl);
  std::vector<float*> sbuf(nl), rbuf(nl);
  size_t maxcount = o.maxb / sizeof(float) + nranks;
  for (int i = 0; i < nl; i++) {
    CUDACHECK(cudaSetDevice(devs[i]));
    CUDACHECK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
    CUDACHECK(cudaMalloc(&sbuf[i], maxcount * sizeof(float)));
    CUDACHECK(cudaMalloc(&rbuf[i], maxcount * sizeof(float)));
    fill<<<1024, 256, 0, st[i]>>>(sbuf[i], maxcount, 1.0f);
  }
  auto sync_all = [&]() {
    for (int i = 0; i < nl; i++) { CUDACHECK(cudaSetDevice(devs[i])); CUDACHECK(cudaStreamSynchronize(st[i])); }
  };
  auto line_up = [&]() {   // every rank reaches this point before timing starts
    NCCLCHECK(ncclGroupStart());
    for (int i = 0; i < nl; i++)
      NCCLCHECK(ncclAllReduce(sbuf[i], rbuf[i], 1, ncclFloat, ncclSum, comms[i], st[i]));
    NCCLCHECK(ncclGroupEnd());
    sync_all();
  };
  const char* ops[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                       "sendrecv", "broadcast"};
  if (print)
    printf("collective,n_ranks,size_bytes,time_us,algbw_GBps,busbw_GBps,wrong,nccl_version\n");
  for (const char* op : ops) {
    std::string s(op);
    double fac = s == "all_reduce" ? 2.0 * (nranks - 1) / nranks
               : (s == "sendrecv" || s == "broadcast") ? 1.0 : (double)(nranks - 1) / nranks;
    if (print)
      fprintf(stderr, "#\n# %s  nranks %d  NCCL %d\n#%12s %12s %10s %8s %8s %6s\n", op, nranks,
              ver, "size", "count", "time(us)", "algbw", "busbw", "#wrong");
    for (size_t size = o.minb; size <= o.maxb; size *= o.factor) {
      size_t count = size / sizeof(float);
      if (count < (size_t)nranks) count = nranks;
      bool chunked = s == "all_gather" || s == "reduce_scatter" || s == "alltoall";
      size_t per = chunked ? count / nranks : count;
      size_t bytes = (chunked ? per * nranks : count) * sizeof(float);
      auto run = [&]() {
        NCCLCHECK(ncclGroupStart());
        for (int i = 0; i < nl; i++) {
          int g = ranks[i];
          if (s == "all_reduce")
            NCCLCHECK(ncclAllReduce(sbuf[i], rbuf[i], count, ncclFloat, ncclSum, comms[i], st[i]));
          else if (s == "all_gather")
            NCCLCHECK(ncclAllGather(sbuf[i], rbuf[i], per, ncclFloat, comms[i], st[i]));
          else if (s == "reduce_scatter")
            NCCLCHECK(ncclReduceScatter(sbuf[i], rbuf[i], per, ncclFloat, ncclSum, comms[i], st[i]));
          else if (s == "broadcast")
            NCCLCHECK(ncclBroadcast(sbuf[i], rbuf[i], count, ncclFloat, 0, comms[i], st[i]));
          else if (s == "alltoall") {
            for (int p = 0; p < nranks; p++) {
              NCCLCHECK(ncclSend(sbuf[i] + p * per, per, ncclFloat, p, comms[i], st[i]));
              NCCLCHECK(ncclRecv(rbuf[i] + p * per, per, ncclFloat, p, comms[i], st[i]));
            }
          } else {  // sendrecv: ring shift
            NCCLCHECK(ncclSend(sbuf[i], count, ncclFloat, (g + 1) % nranks, comms[i], st[i]));
            NCCLCHECK(ncclRecv(rbuf[i], count, ncclFloat, (g - 1 + nranks) % nranks, comms[i], st[i]));
          }
        }
        NCCLCHECK(ncclGroupEnd());
      };
      for (int w = 0; w < o.warm; w++) run();
      sync_all();
      line_up();
      std::vector<cudaGraphExec_t> exec(nl);
      if (o.graph) {   // the timed calls, captured once per GPU (as nccl-tests -G)
        for (int i = 0; i < nl; i++) {
          CUDACHECK(cudaSetDevice(devs[i]));
          CUDACHECK(cudaStreamBeginCapture(st[i], cudaStreamCaptureModeThreadLocal));
        }
        for (int it = 0; it < o.iters; it++) run();
        for (int i = 0; i < nl; i++) {
          cudaGraph_t gr;
          CUDACHECK(cudaSetDevice(devs[i]));
          CUDACHECK(cudaStreamEndCapture(st[i], &gr));
          CUDACHECK(cudaGraphInstantiate(&exec[i], gr, 0));
          CUDACHECK(cudaGraphDestroy(gr));
        }
        for (int i = 0; i < nl; i++) {   // one untimed replay: uploads the graphs
          CUDACHECK(cudaSetDevice(devs[i])); CUDACHECK(cudaGraphLaunch(exec[i], st[i]));
        }
        sync_all();
        line_up();
      }
      cudaEvent_t t0, t1;
      CUDACHECK(cudaSetDevice(devs[0]));
      CUDACHECK(cudaEventCreate(&t0)); CUDACHECK(cudaEventCreate(&t1));
      CUDACHECK(cudaEventRecord(t0, st[0]));
      if (o.graph) {
        for (int i = 0; i < nl; i++) {
          CUDACHECK(cudaSetDevice(devs[i])); CUDACHECK(cudaGraphLaunch(exec[i], st[i]));
        }
      } else {
        for (int it = 0; it < o.iters; it++) run();
      }
      // the first GPU's stream waits for this process's other GPUs before the end event
      for (int i = 1; i < nl; i++) {
        cudaEvent_t e; CUDACHECK(cudaSetDevice(devs[i]));
        CUDACHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        CUDACHECK(cudaEventRecord(e, st[i]));
        CUDACHECK(cudaSetDevice(devs[0])); CUDACHECK(cudaStreamWaitEvent(st[0], e, 0));
      }
      CUDACHECK(cudaSetDevice(devs[0]));
      CUDACHECK(cudaEventRecord(t1, st[0]));
      CUDACHECK(cudaEventSynchronize(t1));
      float ms; CUDACHECK(cudaEventElapsedTime(&ms, t0, t1));
      sync_all();
      if (o.graph)
        for (int i = 0; i < nl; i++) {
          CUDACHECK(cudaSetDevice(devs[i])); CUDACHECK(cudaGraphExecDestroy(exec[i]));
        }
      CUDACHECK(cudaEventDestroy(t0)); CUDACHECK(cudaEventDestroy(t1));
      double t = ms / 1e3 / o.iters;
      long wrong = 0;
      if (s == "all_reduce") {
        std::vector<float> h(count < 4096 ? count : 4096);
        CUDACHECK(cudaMemcpy(h.data(), rbuf[0], h.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (float v : h) wrong += (v != (float)nranks);
      }
      double algbw = bytes / t / 1e9, busbw = algbw * fac;
      if (print) {
        printf("%s,%d,%zu,%.3f,%.4f,%.4f,%ld,%d\n", op, nranks, bytes, t * 1e6, algbw, busbw,
               wrong, ver);
        fprintf(stderr, " %12zu %12zu %10.2f %8.2f %8.2f %6ld\n", bytes, bytes / 4, t * 1e6,
                algbw, busbw, wrong);
        fflush(stdout);
      }
    }
  }
  for (int i = 0; i < nl; i++) ncclCommDestroy(comms[i]);
  return 0;
}

int main(int argc, char** argv) {
  Opts o;
  int procs = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-b")) o.minb = strtoull(argv[i + 1], 0, 10);
    else if (!strcmp(argv[i], "-e")) o.maxb = strtoull(argv[i + 1], 0, 10);
    else if (!strcmp(argv[i], "-f")) o.factor = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) o.warm = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-n")) o.iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-g")) o.ng = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-P")) procs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-G")) o.graph = atoi(argv[i + 1]);
  }
  bool one = o.ng == 1;   // -g 1: the harness on one GPU (NCCL's one-rank path)
  if (o.ng == 0) {   // count GPUs in a child, so that this process never initialises CUDA
    int fd[2];
    if (pipe(fd)) return 1;
    pid_t pid = fork();
    if (pid == 0) { int n = 0; cudaGetDeviceCount(&n); if (write(fd[1], &n, sizeof n) < 0) _exit(1); _exit(0); }
    if (read(fd[0], &o.ng, sizeof o.ng) != (ssize_t)sizeof o.ng) return 1;
    waitpid(pid, 0, 0);
  }
  if (o.ng < 2 && !one) { fprintf(stderr, "need at least 2 GPUs (or -g 1 to try the harness)\n"); return 1; }
  if (one) fprintf(stderr, "# -g 1: one GPU, NCCL's one-rank path (the harness only)\n");
  if (!procs) {
    std::vector<int> devs(o.ng);
    for (int i = 0; i < o.ng; i++) devs[i] = i;
    std::vector<ncclComm_t> comms(o.ng);
    NCCLCHECK(ncclCommInitAll(comms.data(), o.ng, devs.data()));
    return sweep(o, devs, devs, comms, o.ng, true);
  }
  // one process per GPU: rank 0 makes the unique id and hands it to the others
  std::vector<int> fds(2 * o.ng);
  for (int r = 1; r < o.ng; r++) if (pipe(&fds[2 * r])) return 1;
  std::vector<pid_t> kids;
  for (int r = 0; r < o.ng; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      ncclUniqueId id;
      if (r == 0) {
        NCCLCHECK(ncclGetUniqueId(&id));
        for (int q = 1; q < o.ng; q++)
          if (write(fds[2 * q + 1], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
      } else if (read(fds[2 * r], &id, sizeof id) != (ssize_t)sizeof id) {
        _exit(1);
      }
      CUDACHECK(cudaSetDevice(r));
      std::vector<ncclComm_t> comms(1);
      NCCLCHECK(ncclCommInitRank(&comms[0], o.ng, id, r));
      _exit(sweep(o, {r}, {r}, comms, o.ng, r == 0));
    }
    kids.push_back(pid);
  }
  int rc = 0;
  for (pid_t k : kids) { int st = 0; waitpid(k, &st, 0); if (!WIFEXITED(st) || WEXITSTATUS(st)) rc = 1; }
  return rc;
}
