// gpu_window.cu — the GPU sliding window (gpu_window.cuh has the design).
#include <cuda.h>  // driver types only: the functions come through cudaGetDriverEntryPointByVersion,
                   // so the build does not link libcuda (CI machines have no driver)
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gpu_window.cuh"

namespace {

// ---------------------------------------------------------------------------------- driver calls

struct vmm_api {
  CUresult (*granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
  CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
  CUresult (*release)(CUmemGenericAllocationHandle);
  CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*address_free)(CUdeviceptr, size_t);
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*unmap)(CUdeviceptr, size_t);
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
  CUresult (*error_string)(CUresult, const char **);
};

tw_status vmm_get(vmm_api *a, tw_error *err) {
  static vmm_api api;
  static int loaded = 0;
  static std::mutex lock;  // a survey's sessions create their windows from several threads
  std::lock_guard<std::mutex> hold(lock);
  if (loaded) {
    *a = api;
    return TW_OK;
  }
  struct {
    const char *name;
    void **fn;
  } t[] = {{"cuMemGetAllocationGranularity", (void **)&api.granularity},
           {"cuMemCreate", (void **)&api.create},
           {"cuMemRelease", (void **)&api.release},
           {"cuMemAddressReserve", (void **)&api.reserve},
           {"cuMemAddressFree", (void **)&api.address_free},
           {"cuMemMap", (void **)&api.map},
           {"cuMemUnmap", (void **)&api.unmap},
           {"cuMemSetAccess", (void **)&api.set_access},
           {"cuGetErrorString", (void **)&api.error_string}};
  for (auto &e : t) {
    cudaDriverEntryPointQueryResult q;
    TW_CUDA_TRY(err, cudaGetDriverEntryPointByVersion(e.name, e.fn, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !*e.fn)
      return tw_error_set(err, TW_ECUDA, "the CUDA driver has no %s (virtual memory management, needed by the "
                          "sliding window)", e.name);
  }
  loaded = 1;
  *a = api;
  return TW_OK;
}

#define TW_CU_TRY(err, api, call)                                                                   \
  do {                                                                                              \
    CUresult tw_r_ = (call);                                                                        \
    if (tw_r_ != CUDA_SUCCESS) {                                                                    \
      const char *tw_s_ = "unknown error";                                                         \
      (api).error_string(tw_r_, &tw_s_);                                                            \
      return tw_error_set((err), tw_r_ == CUDA_ERROR_OUT_OF_MEMORY ? TW_ENOMEM : TW_ECUDA,         \
                          "%s failed (%s:%d): %s", #call, __FILE__, __LINE__, tw_s_);              \
    }                                                                                               \
  } while (0)

CUmemAllocationProp device_prop(int dev) {
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  return p;
}

size_t gcd(size_t a, size_t b) {
  while (b) {
    const size_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// A ring's size must be a whole number of granules (to be mapped twice): W·plane ≡ 0 (mod gran).
int quantum_of(size_t plane_bytes, size_t gran) { return (int)(gran / gcd(plane_bytes, gran)); }

// An event whose identity outlives re-recording: (pool index, serial of the record).
struct ev_ref {
  int idx = -1;
  long serial = 0;
};

}  // namespace

struct tw_gpu_window {
  vmm_api api;
  tw_gpu_plane_layout L;
  long long SX;    // floats per plane
  int W, dev;
  size_t ring_bytes;  // per array: W·SX·4
  CUdeviceptr va[3];
  CUmemGenericAllocationHandle h[3];
  int mapped[3];
  float *host[2];
  int host_registered[2];  // host[a] from tw_alloc_large, page-locked by cudaHostRegister (else cudaHostAlloc)
  float *c2;  // pb->c2dt2
  int c2_registered;
  cudaStream_t s_in, s_out;
  // event pool: an entry is synchronized before it is recorded again, so a reference to an older
  // record names finished work
  std::vector<cudaEvent_t> pool;
  std::vector<long> pool_serial;
  long serial;
  ev_ref last_in;
  unsigned long long *nf;  // the non-finite scan of the planes that went back (tw_gpu_nonfinite_scan)
  std::vector<unsigned char> c2_same_next;  // tw_window_c2_repeats of c2
  // The slot rotation (slot_of) and the lowest plane of the last block run (INT_MIN: none yet).
  int rot = 0, last_lo = INT_MIN;
  // slots: the plane in each, and the event that releases it (an invalid ref: not yet released)
  std::vector<int> occupant;
  std::vector<ev_ref> release;
  std::vector<char> released;
  double chunk_bytes = 0;  // TW_WINDOW_CHUNK_BYTES (0: CHUNK_BYTES)
  std::vector<ev_ref> in_release;  // tw_gpu_window_in's scratch: the releases of the slots it fills
  // TW_WINDOW_TRACE=FILE (a diagnostic): every in-copy batch, out-copy chunk and group launch as
  // stream intervals, appended to FILE at each tw_gpu_window_finish (trace_flush)
  const char *trace_path = nullptr;
  struct span {
    char kind;  // 'i' in-copies, 'o' out-copies, 'k' a group's launches
    int group, lo, hi;
    int ev[3];  // indices into tr_ev: queued (before its waits), started, done
  };
  std::vector<span> spans;
  std::vector<cudaEvent_t> tr_ev;
  size_t tr_used = 0;
  int tr_group = -1, tr_advance = 0, tr_window = 0;
  // timed waits of the compute stream: (before, after) pairs of this advance
  std::vector<cudaEvent_t> tev;
  size_t ntev;
  tw_gpu_window_stats st;
};

namespace {

constexpr int NPOOL = 256;
// Copies go in chunks of about this many bytes per array (at least one plane): each out-chunk
// releases its slots, and each in-chunk waits only for the release of its own, so that the next
// group's in-copies follow the out-copies a chunk behind, both directions of the link busy at once
// (they are independent: ~52 GB/s each way on the H200 machines, 95–100 together). 8 MB copies
// run at 98 % of 64 MB ones; 2 MB ones at 93 %.
constexpr double CHUNK_BYTES = 8e6;
constexpr int NONE = INT_MIN;

// Plane x's slot: a rotation of x mod W, chosen per block (tw_gpu_window_run_plan). Any W
// consecutive planes still take distinct slots at affine addresses in the doubly mapped ring.
int slot_of(const tw_gpu_window *w, int x) {
  const long long s = ((long long)x + w->rot) % w->W;
  return (int)(s < 0 ? s + w->W : s);
}

tw_status record(tw_gpu_window *w, cudaStream_t s, ev_ref *ref, tw_error *err) {
  const int i = (int)(++w->serial % NPOOL);
  if (w->pool_serial[i]) TW_CUDA_TRY(err, cudaEventSynchronize(w->pool[i]));  // recorded NPOOL records ago
  TW_CUDA_TRY(err, cudaEventRecord(w->pool[i], s));
  w->pool_serial[i] = w->serial;
  ref->idx = i;
  ref->serial = w->serial;
  return TW_OK;
}

tw_status wait_ref(tw_gpu_window *w, cudaStream_t s, const ev_ref &ref, tw_error *err) {
  if (ref.idx >= 0 && w->pool_serial[ref.idx] == ref.serial) TW_CUDA_TRY(err, cudaStreamWaitEvent(s, w->pool[ref.idx], 0));
  return TW_OK;  // else: re-recorded since, so synchronized: finished
}

// The trace's events: recorded on a stream, read back at trace_flush. Returns the index, or −1
// (the error cleared: a diagnostic must not fail a later launch check).
int trace_mark(tw_gpu_window *w, cudaStream_t s) {
  if (!w->trace_path) return -1;
  if (w->tr_used == w->tr_ev.size()) {
    cudaEvent_t e;
    if (cudaEventCreate(&e)) return cudaGetLastError(), -1;
    w->tr_ev.push_back(e);
  }
  if (cudaEventRecord(w->tr_ev[w->tr_used], s)) return cudaGetLastError(), -1;
  return (int)w->tr_used++;
}
void trace_span(tw_gpu_window *w, char kind, int lo, int hi, const int ev[3]) {
  if (w->trace_path) w->spans.push_back({kind, w->tr_group, lo, hi, {ev[0], ev[1], ev[2]}});
}
// Appends "window advance kind group lo hi queued_ms start_ms end_ms" lines (times from the
// advance's first event) after the streams are synchronized, the whole advance in one write under a
// lock: a survey's windows (one per session, threads of one process) share the file, told apart by
// the window number. The file was opened once at the window's creation (a path that cannot be
// written fails there); a later write error drops the trace rather than the run.
std::mutex trace_lock;
int trace_windows = 0;
void trace_flush(tw_gpu_window *w) {
  if (!w->trace_path || w->spans.empty()) return;
  std::string text;
  char line[160];
  for (const auto &sp : w->spans) {
    float t[3] = {-1, -1, -1};
    for (int j = 0; j < 3; j++)
      if (sp.ev[j] >= 0 && cudaEventElapsedTime(&t[j], w->tr_ev[0], w->tr_ev[(size_t)sp.ev[j]]))
        cudaGetLastError(), t[j] = -1;
    if (sp.ev[0] < 0) t[0] = t[1];  // queued behind the span before it on its stream
    snprintf(line, sizeof line, "%d %d %c %d %d %d %.3f %.3f %.3f\n", w->tr_window, w->tr_advance, sp.kind, sp.group,
             sp.lo, sp.hi, t[0], t[1], t[2]);
    text += line;
  }
  w->tr_advance++;
  w->spans.clear();
  w->tr_used = 0;
  std::lock_guard<std::mutex> lock(trace_lock);
  FILE *f = fopen(w->trace_path, "a");
  const bool ok = f && fwrite(text.data(), 1, text.size(), f) == text.size();
  if ((f && fclose(f)) || !ok) w->trace_path = nullptr;
}

// TW_WINDOW_TRACE at the window's creation: the file must take appends; the header once per window.
tw_status trace_open(tw_gpu_window *w, tw_error *err) {
  const char *trace = getenv("TW_WINDOW_TRACE");
  if (!trace || !*trace) return TW_OK;
  std::lock_guard<std::mutex> lock(trace_lock);
  FILE *f = fopen(trace, "a");
  if (!f) return tw_error_set(err, TW_EIO, "TW_WINDOW_TRACE=%s: cannot open for writing", trace);
  w->tr_window = trace_windows++;
  fprintf(f, "# window advance kind group lo hi queued_ms start_ms end_ms (kind: i in-copies, o out-copies, k a "
             "group's launches; group: the run_plan iteration that issued it, whose in-copies are for group + 1)\n");
  if (fclose(f)) return tw_error_set(err, TW_EIO, "TW_WINDOW_TRACE=%s: cannot write", trace);
  w->trace_path = trace;
  return TW_OK;
}

// Planes per copy chunk (CHUNK_BYTES; TW_WINDOW_CHUNK_BYTES, a diagnostic, sets another size: 1e12
// gives one chunk per call, as the in-copies went before session 22 — they waited for every slot).
int chunk_planes(const tw_gpu_window *w) {
  const double plane = 4.0 * w->L.N1 * (double)w->L.N2;
  const double c = w->chunk_bytes > 0 ? w->chunk_bytes : CHUNK_BYTES;
  return (int)std::max(1.0, std::min(1e9, std::ceil(c / plane)));
}

// The grid rows of n consecutive planes: host (grid order, N1 rows of N2 a plane) ↔ device (dev at
// the first plane's row PY, rows of NZp floats, planes SX floats apart). Equal pitches (N2 = NZp):
// each plane's N1 rows are one contiguous run on both sides, one 2D copy of n such runs. Else a 3D
// copy where the planes are whole rows apart (SX = NYd·NZp), a 2D copy per plane where the pitch is
// not. The window's copies and the in-core upload (tw_gpu_upload_grid) both go through it.
tw_status grid_copy(float *dev, long long SX, const tw_gpu_plane_layout &L, float *hst, int n, bool in, cudaStream_t s,
                    tw_error *err) {
  if (L.N2 == L.NZp) {
    const size_t run = (size_t)L.N1 * (size_t)L.N2 * sizeof(float);
    if (in)
      TW_CUDA_TRY(err, cudaMemcpy2DAsync(dev, (size_t)SX * sizeof(float), hst, run, run, (size_t)n,
                                         cudaMemcpyHostToDevice, s));
    else
      TW_CUDA_TRY(err, cudaMemcpy2DAsync(hst, run, dev, (size_t)SX * sizeof(float), run, (size_t)n,
                                         cudaMemcpyDeviceToHost, s));
    return TW_OK;
  }
  if (SX != (long long)L.NYd * L.NZp) {
    const size_t zp = (size_t)L.NZp * sizeof(float), zh = (size_t)L.N2 * sizeof(float);
    for (int i = 0; i < n; i++) {
      float *d = dev + (long long)i * SX, *h = hst + (size_t)i * (size_t)L.N1 * (size_t)L.N2;
      if (in)
        TW_CUDA_TRY(err, cudaMemcpy2DAsync(d, zp, h, zh, zh, (size_t)L.N1, cudaMemcpyHostToDevice, s));
      else
        TW_CUDA_TRY(err, cudaMemcpy2DAsync(h, zh, d, zp, zh, (size_t)L.N1, cudaMemcpyDeviceToHost, s));
    }
    return TW_OK;
  }
  cudaMemcpy3DParms cp;
  memset(&cp, 0, sizeof cp);
  cudaPitchedPtr hp = make_cudaPitchedPtr(hst, (size_t)L.N2 * sizeof(float), (size_t)L.N2, (size_t)L.N1);
  cudaPitchedPtr dp = make_cudaPitchedPtr(dev, (size_t)L.NZp * sizeof(float), (size_t)L.NZp, (size_t)L.NYd);
  cp.srcPtr = in ? hp : dp;
  cp.dstPtr = in ? dp : hp;
  cp.extent = make_cudaExtent((size_t)L.N2 * sizeof(float), (size_t)L.N1, (size_t)n);
  cp.kind = in ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  TW_CUDA_TRY(err, cudaMemcpy3DAsync(&cp, s));
  return TW_OK;
}

// Host rows of planes [x0, x0 + n) of array `host` ↔ their slots.
tw_status copy_planes(tw_gpu_window *w, int a, float *host, int x0, int n, bool in, cudaStream_t s, tw_error *err) {
  const tw_gpu_plane_layout &L = w->L;
  float *dev = (float *)w->va[a] + (long long)slot_of(w, x0) * w->SX + (long long)L.PY * L.NZp;
  return grid_copy(dev, w->SX, L, host + (size_t)x0 * (size_t)L.N1 * (size_t)L.N2, n, in, s, err);
}

// c²dt² arrays registered by windows, with the windows holding each (a survey's sessions share one
// medium): registered by the first, unregistered by the last. 1: this window holds a registration.
std::mutex c2_lock;
std::map<const void *, int> c2_holders;
int c2_register(void *p, size_t bytes) {
  std::lock_guard<std::mutex> hold(c2_lock);
  int &n = c2_holders[p];
  if (!n && cudaHostRegister(p, bytes, cudaHostRegisterPortable) != cudaSuccess) {
    cudaGetLastError();
    c2_holders.erase(p);
    return 0;
  }
  n++;
  return 1;
}
void c2_unregister(void *p) {
  std::lock_guard<std::mutex> hold(c2_lock);
  auto it = c2_holders.find(p);
  if (it == c2_holders.end() || --it->second > 0) return;
  cudaHostUnregister(p);
  c2_holders.erase(it);
}

// n planes from src on: each slot of SX floats (padding included: zero in every slot) a copy of the
// slot at `from`. A device-to-device pass, ~8 B a cell at DRAM speed: ~2 µs a plane of 10^6 cells
// on an H200, against ~100 µs over the link.
__global__ void plane_repeat_kernel(float4 *dst, const float4 *from, long long sx4) {
  float4 *d = dst + (long long)blockIdx.y * sx4;  // one plane per grid row
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < sx4; i += (long long)gridDim.x * blockDim.x)
    d[i] = from[i];
}

}  // namespace

tw_status tw_gpu_upload_grid(const float *src, const int N[3], float *dev, int NZp, int rows, int x0, int y0,
                             cudaStream_t s, tw_phases *ph, tw_error *err) {
  const double t = tw_wall_seconds();
  const size_t bytes = (size_t)N[0] * (size_t)N[1] * (size_t)N[2] * sizeof(float);
  tw_gpu_plane_layout L = {N[0], N[1], N[2], rows, NZp, y0, (long long)rows * NZp};
  // Page-locked for the copy where it pays: registering costs ~35 ms a GB (session 21), pageable
  // copies ran 5.6–6.2 GB/s against ~50 (session 27). Held like the windows' registrations, so a
  // window of another session that registered the same array keeps it. TW_GPU_REGISTER_MIN (bytes,
  // default 64 MiB) moves the threshold: the GPU suite runs with 0 as well, so that the
  // page-locked paths are crossed against the window's copies on its odd sizes.
  const char *env = getenv("TW_GPU_REGISTER_MIN");
  const double least = env && *env ? atof(env) : (double)(64u << 20);
  const int pinned = (double)bytes >= least && c2_register((void *)src, bytes);
  tw_status st = grid_copy(dev + (long long)x0 * L.SX + (long long)y0 * NZp, L.SX, L, (float *)src, N[0], true, s, err);
  const cudaError_t e = cudaStreamSynchronize(s);
  if (!st && e != cudaSuccess) st = tw_cuda_fail(err, e, "cudaStreamSynchronize", __FILE__, __LINE__);
  if (pinned) c2_unregister((void *)src);
  tw_phases_add(ph, pinned ? "backend: c2dt2 to the GPU (page-locked)" : "backend: c2dt2 to the GPU",
                tw_wall_seconds() - t);
  return st;
}

tw_status tw_gpu_window_fit(tw_gpu_plane_layout *L, uint64_t cap, int need, int most, int *W, int *quantum,
                            uint64_t *smallest, int *smallest_planes, tw_error *err) {
  vmm_api api;
  tw_status st = vmm_get(&api, err);
  if (st) return st;
  int dev = 0;
  TW_CUDA_TRY(err, cudaGetDevice(&dev));
  const CUmemAllocationProp prop = device_prop(dev);
  size_t gran = 0;
  TW_CU_TRY(err, api, api.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  // Every pitch from the plane up to twice it (+ 64 rows), in steps of 32 floats (a few thousand
  // candidates, integer arithmetic): the most planes under the cap; ties to the smaller pitch.
  const long long base = (long long)L->NYd * L->NZp, top_sx = 2 * base + 64LL * L->NZp;
  long long best_sx = base;
  int best_w = 0, best_q = 1;
  *smallest = UINT64_MAX;
  *smallest_planes = 0;
  for (long long sx = base; sx <= top_sx; sx += 32) {
    const uint64_t plane = 3ull * (uint64_t)sx * sizeof(float);
    const int q = quantum_of(plane / 3, gran);
    uint64_t w = cap / plane / (uint64_t)q * (uint64_t)q;
    const int top = (most + q - 1) / q * q;
    if (w > (uint64_t)top) w = (uint64_t)top;
    if ((int)w > best_w) best_w = (int)w, best_sx = sx, best_q = q;
    const int np = (need + q - 1) / q * q;
    if ((uint64_t)np * plane < *smallest) *smallest = (uint64_t)np * plane, *smallest_planes = np;
  }
  *W = best_w >= need ? best_w : 0;
  L->SX = best_sx;
  *quantum = best_q;
  return TW_OK;
}

uint64_t tw_gpu_window_bytes(const tw_gpu_plane_layout *L, int W) {
  return 3ull * (uint64_t)W * (uint64_t)L->SX * sizeof(float);
}

void tw_gpu_window_destroy(tw_gpu_window *w) {
  if (!w) return;
  // Errors are ignored: this also runs on error paths where the context may be broken.
  if (w->s_in) cudaStreamSynchronize(w->s_in);
  if (w->s_out) cudaStreamSynchronize(w->s_out);
  for (int a = 0; a < 3; a++) {
    if (w->mapped[a]) w->api.unmap(w->va[a], 2 * w->ring_bytes);
    if (w->h[a]) w->api.release(w->h[a]);
    if (w->va[a]) w->api.address_free(w->va[a], 2 * w->ring_bytes);
  }
  for (cudaEvent_t e : w->pool) cudaEventDestroy(e);
  for (cudaEvent_t e : w->tev) cudaEventDestroy(e);
  for (cudaEvent_t e : w->tr_ev) cudaEventDestroy(e);
  if (w->s_in) cudaStreamDestroy(w->s_in);
  if (w->s_out) cudaStreamDestroy(w->s_out);
  cudaFree(w->nf);
  for (int a = 0; a < 2; a++) {
    if (w->host_registered[a]) cudaHostUnregister(w->host[a]), free(w->host[a]);
    else cudaFreeHost(w->host[a]);
  }
  if (w->c2_registered) c2_unregister(w->c2);
  cudaGetLastError();
  delete w;
}

static tw_status window_init(tw_gpu_window *w, const tw_problem *pb, const tw_gpu_plane_layout *L, int W,
                             const unsigned char *same_next, tw_error *err) {
  tw_status st = vmm_get(&w->api, err);
  if (st) return st;
  double t = tw_wall_seconds();
  if ((st = trace_open(w, err))) return st;
  const char *chunk = getenv("TW_WINDOW_CHUNK_BYTES");
  w->chunk_bytes = chunk && *chunk ? atof(chunk) : 0;
  w->L = *L;
  w->SX = L->SX;
  if (w->SX < (long long)L->NYd * L->NZp || w->SX % 32)
    return tw_error_set(err, TW_EINTERNAL, "window plane pitch %lld floats for planes of %d x %d", w->SX, L->NYd,
                        L->NZp);
  TW_CUDA_TRY(err, cudaMalloc((void **)&w->nf, 2 * sizeof(unsigned long long)));
  if ((st = tw_gpu_nonfinite_reset(w->nf, 0, err))) return st;
  w->W = W;
  w->st.W = W;
  TW_CUDA_TRY(err, cudaGetDevice(&w->dev));
  const CUmemAllocationProp prop = device_prop(w->dev);
  size_t gran = 0;
  TW_CU_TRY(err, w->api, w->api.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  w->ring_bytes = (size_t)W * (size_t)w->SX * sizeof(float);
  if (w->ring_bytes % gran)
    return tw_error_set(err, TW_EINTERNAL, "a ring of %d planes of %lld floats is not a multiple of the %zu-byte "
                        "granularity", W, w->SX, gran);
  CUmemAccessDesc acc;
  memset(&acc, 0, sizeof acc);
  acc.location = prop.location;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int a = 0; a < 3; a++) {
    TW_CU_TRY(err, w->api, w->api.reserve(&w->va[a], 2 * w->ring_bytes, gran, 0, 0));
    TW_CU_TRY(err, w->api, w->api.create(&w->h[a], w->ring_bytes, &prop, 0));
    TW_CU_TRY(err, w->api, w->api.map(w->va[a], w->ring_bytes, 0, w->h[a], 0));
    w->mapped[a] = 1;  // unmapping the whole range also covers a half-mapped one
    TW_CU_TRY(err, w->api, w->api.map(w->va[a] + w->ring_bytes, w->ring_bytes, 0, w->h[a], 0));
    TW_CU_TRY(err, w->api, w->api.set_access(w->va[a], 2 * w->ring_bytes, &acc, 1));
  }
  // The in-stream at the highest priority: the kernel that copies a repeating c²dt² plane on the
  // device (c2_in) is on it, between in-copies, and at the default priority its blocks queued behind
  // the stepwise kernel's, holding up the copies behind it.
  int least = 0, greatest = 0;
  TW_CUDA_TRY(err, cudaDeviceGetStreamPriorityRange(&least, &greatest));
  TW_CUDA_TRY(err, cudaStreamCreateWithPriority(&w->s_in, cudaStreamNonBlocking, greatest));
  TW_CUDA_TRY(err, cudaStreamCreateWithFlags(&w->s_out, cudaStreamNonBlocking));
  // Padding rows and cells are zero for good; the slots' grid cells are written by every in-copy.
  for (int a = 0; a < 3; a++) TW_CUDA_TRY(err, cudaMemsetAsync((void *)w->va[a], 0, w->ring_bytes, w->s_in));
  tw_phases_add(pb->phases, "backend: window: the ring (device)", tw_wall_seconds() - t);
  t = tw_wall_seconds();

  // The levels: allocated, zeroed by all threads (the first touch faults the pages in), then
  // page-locked. cudaHostAlloc did all of it in one thread of the driver: 5.4 s for 10.9 GB on the
  // H200 machine (two from two threads 9.7 s), against 0.5 s of touching and 0.4 s of
  // cudaHostRegister (session 21, docs/performance.md). Where registering is refused (locked-memory
  // limits), cudaHostAlloc as before.
  const size_t cells = (size_t)L->N0 * (size_t)L->N1 * (size_t)L->N2, bytes = cells * sizeof(float);
  for (int a = 0; a < 2; a++) {
    w->host[a] = (float *)tw_alloc_large(bytes);
    if (w->host[a]) {
      tw_zero_floats(w->host[a], cells);
      if (cudaHostRegister(w->host[a], bytes, cudaHostRegisterPortable) == cudaSuccess) {
        w->host_registered[a] = 1;
        continue;
      }
      cudaGetLastError();
      free(w->host[a]);
    }
    const cudaError_t e = cudaHostAlloc((void **)&w->host[a], bytes, cudaHostAllocDefault);
    if (e != cudaSuccess) {
      char b[32];
      w->host[a] = NULL;
      tw_cuda_fail(err, e, "cudaHostAlloc", __FILE__, __LINE__);
      return tw_error_prefix(err, "pinned host memory for the full field (%s per time level)",
                             tw_format_bytes((double)bytes, b, sizeof b));
    }
    tw_zero_floats(w->host[a], cells);
  }
  tw_phases_add(pb->phases, "backend: window: host levels (pinned, zeroed)", tw_wall_seconds() - t);
  t = tw_wall_seconds();
  w->c2 = pb->c2dt2;
  w->c2_same_next.resize((size_t)L->N0);
  if (same_next) std::copy(same_next, same_next + L->N0, w->c2_same_next.begin());
  else tw_window_c2_repeats(w->c2, L->N0, (size_t)L->N1 * (size_t)L->N2, w->c2_same_next.data());
  // Registered, the c²dt² copies are asynchronous DMA; if the OS refuses (locked-memory limits),
  // they still work from pageable memory, only without overlapping the kernels. Portable: a
  // survey's sessions on other GPUs share the medium's array, registered once and counted
  // (c2_register): the last window to go unregisters it, so a session destroyed early (its set-up
  // failed) cannot unlock pages that other sessions' copies are reading.
  w->c2_registered = c2_register(w->c2, cells * sizeof(float));
  tw_phases_add(pb->phases, "backend: window: c2dt2 registered, its repeats", tw_wall_seconds() - t);

  w->pool.resize(NPOOL);
  w->pool_serial.assign(NPOOL, 0);
  for (auto &e : w->pool) TW_CUDA_TRY(err, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  w->occupant.assign((size_t)W, NONE);
  w->release.assign((size_t)W, ev_ref());
  w->released.assign((size_t)W, 1);
  TW_CUDA_TRY(err, cudaStreamSynchronize(w->s_in));
  return TW_OK;
}

tw_status tw_gpu_window_create(const tw_problem *pb, const tw_gpu_plane_layout *L, int W,
                               const unsigned char *c2_same_next, tw_gpu_window **out, tw_error *err) {
  *out = NULL;
  tw_gpu_window *w = new (std::nothrow) tw_gpu_window();
  if (!w) return tw_error_set(err, TW_ENOMEM, "sliding window: out of memory");
  tw_status st;
  try {
    st = window_init(w, pb, L, W, c2_same_next, err);
  } catch (const std::bad_alloc &) {
    st = tw_error_set(err, TW_ENOMEM, "out of memory");
  }
  if (st) {
    char b[32];
    tw_error_prefix(err, "sliding window of %d x-planes (%s on the GPU)", W,
                    tw_format_bytes((double)tw_gpu_window_bytes(L, W), b, sizeof b));
    tw_gpu_window_destroy(w);
    return st;
  }
  *out = w;
  return TW_OK;
}

float *tw_gpu_window_origin(const tw_gpu_window *w, int a, int lo) {
  return (float *)w->va[a] + (long long)(slot_of(w, lo) - lo) * w->SX + (long long)w->L.PY * w->L.NZp;
}

// c²dt² of the grid planes [g0, g1), from the top down on the in-stream: runs of planes that repeat
// plane x + 1 (tw_window_c2_repeats) are copied from it on the device where it is in the ring — live
// (its in-copy issued earlier on this stream, not yet released) or coming in in this call, above —
// the others over the link. Every plane a sweep brings in has plane x + 1 live (the planes come in
// from high x to low and leave from high x, tw_window_plan), so only the block's topmost plane and
// the planes that differ from their neighbour cross the link.
static tw_status c2_in(tw_gpu_window *w, int g0, int g1, tw_error *err) {
  const unsigned char *same = w->c2_same_next.data();
  auto live = [&](int x) {
    const int sl = slot_of(w, x);
    return x < g1 || (x < w->L.N0 && w->occupant[(size_t)sl] == x && !w->released[(size_t)sl]);
  };
  for (int x = g1 - 1; x >= g0;) {
    int a = x;
    if (same[x] && live(x + 1)) {
      while (a > g0 && same[a - 1]) a--;  // [a, x] all equal plane x + 1
      const long long sx4 = w->SX / 4;  // SX is a multiple of 32 floats
      float *base = (float *)w->va[2] + (long long)(slot_of(w, a) - a) * w->SX;  // plane y at base + y·SX
      for (int y = a; y <= x; y += 65535) {  // grid rows: at most 65535 planes a launch
        const dim3 grid((unsigned)std::min<long long>((sx4 + 255) / 256, 512), (unsigned)std::min(x + 1 - y, 65535));
        plane_repeat_kernel<<<grid, 256, 0, w->s_in>>>((float4 *)(base + (long long)y * w->SX),
                                                        (const float4 *)(base + (long long)(x + 1) * w->SX), sx4);
        TW_CUDA_LAUNCHED(err, "plane_repeat_kernel");
      }
      w->st.c2_reused += x + 1 - a;
    } else {
      while (a > g0 && !same[a - 1]) a--;  // planes copied over the link: [a, x] (a − 1 repeats a, live)
      tw_status st = copy_planes(w, 2, w->c2, a, x + 1 - a, true, w->s_in, err);
      if (st) return st;
      w->st.bytes_in += 4.0 * (x + 1 - a) * (double)w->L.N1 * w->L.N2;
    }
    x = a - 1;
  }
  return TW_OK;
}

tw_status tw_gpu_window_in(tw_gpu_window *w, int lo, int hi, tw_error *err) {
  if (hi <= lo) return TW_OK;
  if (hi - lo > w->W)
    return tw_error_set(err, TW_EINTERNAL, "window: %d planes in at once, the ring has %d", hi - lo, w->W);
  std::vector<ev_ref> &rel = w->in_release;  // the slots' releases, taken before they are reassigned
  rel.resize((size_t)(hi - lo));
  for (int x = lo; x < hi; x++) {
    const int sl = slot_of(w, x);
    if (!w->released[(size_t)sl])
      return tw_error_set(err, TW_EINTERNAL, "window: plane %d would overwrite plane %d, still in use (slot %d of %d)",
                          x, w->occupant[(size_t)sl], sl, w->W);
    rel[(size_t)(x - lo)] = w->release[(size_t)sl];
    w->occupant[(size_t)sl] = x;
    w->released[(size_t)sl] = 0;
  }
  // The in-stream waits for the release of planes [a, b)'s slots (each event once).
  auto wait_slots = [&](int a, int b) -> tw_status {
    for (int x = a; x < b; x++) {
      const ev_ref &r = rel[(size_t)(x - lo)];
      if (x > a && r.idx == rel[(size_t)(x - 1 - lo)].idx && r.serial == rel[(size_t)(x - 1 - lo)].serial) continue;
      tw_status st = wait_ref(w, w->s_in, r, err);
      if (st) return st;
    }
    return TW_OK;
  };
  // Runs: virtual planes left of the grid, grid planes, virtual planes right of it.
  const int N0 = w->L.N0;
  const int g0 = lo > 0 ? lo : 0, g1 = hi < N0 ? hi : N0;
  tw_status st;
  for (int side = 0; side < 2; side++) {
    const int v0 = side ? (lo > N0 ? lo : N0) : lo, v1 = side ? hi : (hi < 0 ? hi : 0);
    if (v1 > v0) {
      if ((st = wait_slots(v0, v1))) return st;
      for (int a = 0; a < 3; a++)
        TW_CUDA_TRY(err, cudaMemsetAsync((float *)w->va[a] + (long long)slot_of(w, v0) * w->SX, 0,
                                         (size_t)(v1 - v0) * (size_t)w->SX * sizeof(float), w->s_in));
    }
  }
  // Grid planes from the top down in chunks, each after its own slots' release: the slots free from
  // the top down too (the previous occupants went out so, tw_gpu_window_out), so a chunk's copies
  // start as soon as the out-chunk that frees them is done. c²dt² copied from plane x + 1 on the
  // device (c2_in) finds it in the ring: x + 1 came in with an earlier chunk or an earlier call.
  const int chunk = chunk_planes(w);
  for (int c1 = g1; c1 > g0; c1 -= chunk) {
    const int c0 = std::max(g0, c1 - chunk);
    int tr[3] = {trace_mark(w, w->s_in), -1, -1};
    if ((st = wait_slots(c0, c1))) return st;
    tr[1] = trace_mark(w, w->s_in);
    if ((st = copy_planes(w, 0, w->host[0], c0, c1 - c0, true, w->s_in, err))) return st;
    if ((st = copy_planes(w, 1, w->host[1], c0, c1 - c0, true, w->s_in, err))) return st;
    if ((st = c2_in(w, c0, c1, err))) return st;
    tr[2] = trace_mark(w, w->s_in);
    trace_span(w, 'i', c0, c1, tr);
  }
  if (g1 > g0) {
    w->st.planes_in += g1 - g0;
    w->st.bytes_in += 8.0 * (g1 - g0) * (double)w->L.N1 * w->L.N2;
  }
  return record(w, w->s_in, &w->last_in, err);
}

// `stream` waits for the in-copies up to `ref`, timed (the copy wait of the stats).
static tw_status wait_in(tw_gpu_window *w, cudaStream_t stream, const ev_ref &ref, tw_error *err) {
  if (w->ntev + 2 > w->tev.size()) {
    cudaEvent_t e[2];
    for (auto &x : e) TW_CUDA_TRY(err, cudaEventCreate(&x));
    w->tev.push_back(e[0]);
    w->tev.push_back(e[1]);
  }
  TW_CUDA_TRY(err, cudaEventRecord(w->tev[w->ntev], stream));
  tw_status st = wait_ref(w, stream, ref, err);
  if (st) return st;
  TW_CUDA_TRY(err, cudaEventRecord(w->tev[w->ntev + 1], stream));
  w->ntev += 2;
  return TW_OK;
}

tw_status tw_gpu_window_out(tw_gpu_window *w, cudaStream_t stream, int lo, int hi, tw_error *err) {
  if (hi <= lo) return TW_OK;
  const int N0 = w->L.N0;
  const int g0 = lo > 0 ? lo : 0, g1 = hi < N0 ? hi : N0;
  tw_status st;
  // These grid planes are final for the block: scan both levels for non-finite values before they
  // go (the host copy is then never read for it), on the compute stream, which the copies wait for.
  if (g1 > g0) {
    tw_dev_layout L;
    L.N[0] = N0, L.N[1] = w->L.N1, L.N[2] = w->L.N2;
    L.Nyp = w->L.NYd, L.Nzp = w->L.NZp, L.sx = w->SX, L.fs = 0;
    for (int a = 0; a < 2; a++)
      if ((st = tw_gpu_nonfinite_scan(w->nf, L, tw_gpu_window_origin(w, a, g0), g0, g1, stream, err))) return st;
  }
  ev_ref k, o;
  st = record(w, stream, &k, err);
  if (st) return st;
  const int queued = trace_mark(w, w->s_out);
  if ((st = wait_ref(w, w->s_out, k, err))) return st;
  for (int x = lo; x < hi; x++) {
    const int sl = slot_of(w, x);
    if (w->occupant[(size_t)sl] != x || w->released[(size_t)sl])
      return tw_error_set(err, TW_EINTERNAL, "window: plane %d goes out but slot %d holds plane %d", x, sl,
                          w->occupant[(size_t)sl]);
    w->release[(size_t)sl] = k;  // virtual planes: free once the kernels before are done
    w->released[(size_t)sl] = 1;
  }
  // Grid planes from the top down, in chunks that each release their slots: a block's last group
  // sends back all its ~h·r planes at once, and the next block's first in-copies go to the slots
  // the highest of them free first (tw_gpu_window_run_plan), so they wait for one chunk, not all.
  const int chunk = chunk_planes(w);
  for (int c1 = g1; c1 > g0; c1 -= chunk) {
    const int c0 = std::max(g0, c1 - chunk);
    int tr[3] = {c1 == g1 ? queued : -1, trace_mark(w, w->s_out), -1};  // the kernel wait: the first chunk's
    if ((st = copy_planes(w, 0, w->host[0], c0, c1 - c0, false, w->s_out, err))) return st;
    if ((st = copy_planes(w, 1, w->host[1], c0, c1 - c0, false, w->s_out, err))) return st;
    tr[2] = trace_mark(w, w->s_out);
    trace_span(w, 'o', c0, c1, tr);
    if ((st = record(w, w->s_out, &o, err))) return st;
    for (int x = c0; x < c1; x++) w->release[(size_t)slot_of(w, x)] = o;
  }
  if (g1 > g0) {  // (an interval of virtual planes only has g1 < g0)
    w->st.planes_out += g1 - g0;
    w->st.bytes_out += 8.0 * (g1 - g0) * (double)w->L.N1 * w->L.N2;
  }
  return TW_OK;
}

tw_status tw_gpu_window_run_plan(tw_gpu_window *w, const cudaStream_t *streams, int nstreams,
                                 const tw_window_plan *p, tw_gpu_window_group_fn fn, void *ctx, tw_error *err) {
  tw_status st;
  ev_ref in_of[2];  // after the in-copies of group k: in_of[k % 2]
  w->st.nstreams = nstreams;
  // The block's first planes into the slots the last block freed first. The last block ended on its
  // lowest planes [last_lo, last_lo + W), each slot's last occupant, and sent them back from the
  // top down (tw_gpu_window_out), so this block's top plane, and the ones below it, take the slots
  // of last_lo + W − 1 and below: its first in-copies wait for the first of those out-copies, not
  // for all of them behind the last block's final kernel (with x mod W the top planes' slots were
  // those of the last block's live bottom planes). Every plane of a block comes in before it is read.
  // Plane x then takes the slot of plane y = x + d of the last block, d = last_lo + W − top, and its
  // in-copy waits for y's release; the host plane x it reads went back before y only if y ≤ x (out-
  // copies go from the top down on one stream, and the in-copies of the planes between, issued
  // before x's, wait for theirs). Where the ring holds more than the span (d > 0: a cap near the
  // in-core size, or a short last block), the rotation stays: each plane takes its own last slot
  // (d = 0), and its in-copy waits for its own out-copy (a host-side model of the events found this:
  // the next block read planes not yet written back; session 22).
  int top, unused;
  tw_window_group_touched(p, 0, &unused, &top);
  if (w->last_lo != INT_MIN && (long long)w->last_lo + w->W <= top) {
    const int want = slot_of(w, w->last_lo + w->W - 1);
    w->rot = (int)((((long long)want - (top - 1)) % w->W + w->W) % w->W);
  }
  tw_window_group_touched(p, p->ngroups - 1, &w->last_lo, &unused);
  for (int g = 0; g < p->ngroups; g++) {
    const cudaStream_t stream = streams[g % nstreams];
    int lo, hi;
    w->tr_group = g;
    for (int k = g ? g + 1 : 0; k <= g + 1 && k < p->ngroups; k++) {
      tw_window_group_in(p, k, &lo, &hi);
      if ((st = tw_gpu_window_in(w, lo, hi, err))) return st;
      in_of[k % 2] = w->last_in;
    }
    // Group g waits for its own planes (issued at g − 1, or just now for g = 0) and every copy
    // before them (one in-stream).
    int tr[3] = {trace_mark(w, stream), -1, -1};
    if ((st = wait_in(w, stream, in_of[g % 2], err))) return st;
    tw_window_group_touched(p, g, &lo, &hi);
    tr[1] = trace_mark(w, stream);
    if ((st = fn(ctx, g, lo, stream, err))) return st;
    tr[2] = trace_mark(w, stream);
    trace_span(w, 'k', lo, hi, tr);
    tw_window_group_out(p, g, &lo, &hi);
    if ((st = tw_gpu_window_out(w, stream, lo, hi, err))) return st;
  }
  return TW_OK;
}

tw_status tw_gpu_window_reset(tw_gpu_window *w, tw_error *err) {
  TW_CUDA_TRY(err, cudaStreamSynchronize(w->s_in));
  TW_CUDA_TRY(err, cudaStreamSynchronize(w->s_out));
  const size_t cells = (size_t)w->L.N0 * (size_t)w->L.N1 * (size_t)w->L.N2;
  tw_zero_floats(w->host[0], cells);
  tw_zero_floats(w->host[1], cells);
  w->ntev = 0;
  const int W = w->st.W;
  w->st = tw_gpu_window_stats();
  w->st.W = W;
  return TW_OK;
}

tw_status tw_gpu_levels_zero(tw_gpu_window *w, float *const level[2], size_t floats, cudaStream_t stream,
                             tw_error *err) {
  if (w) return tw_gpu_window_reset(w, err);
  for (int a = 0; a < 2; a++) TW_CUDA_TRY(err, cudaMemsetAsync(level[a], 0, floats * sizeof(float), stream));
  return TW_OK;
}

tw_status tw_gpu_window_finish(tw_gpu_window *w, tw_error *err) {
  TW_CUDA_TRY(err, cudaStreamSynchronize(w->s_in));
  TW_CUDA_TRY(err, cudaStreamSynchronize(w->s_out));
  for (size_t i = 0; i + 1 < w->ntev; i += 2) {
    TW_CUDA_TRY(err, cudaEventSynchronize(w->tev[i + 1]));
    float ms = 0;
    TW_CUDA_TRY(err, cudaEventElapsedTime(&ms, w->tev[i], w->tev[i + 1]));
    w->st.wait_s += 1e-3 * ms;
  }
  w->ntev = 0;
  trace_flush(w);
  return TW_OK;
}

const float *tw_gpu_window_host(const tw_gpu_window *w, int a) { return a < 2 ? w->host[a] : w->c2; }
float *tw_gpu_window_level(tw_gpu_window *w, int a) { return w->host[a & 1]; }

tw_gpu_window_stats tw_gpu_window_get_stats(const tw_gpu_window *w) { return w->st; }

void tw_gpu_window_extract(const tw_gpu_window *w, long level, const int lo[3], const int cnt[3], int dec, float *out) {
  const size_t N1 = (size_t)w->L.N1, N2 = (size_t)w->L.N2;
  tw_gather_box(w->host[level % 2], N1 * N2, N2, lo, cnt, dec, out);
}

void tw_gpu_window_report(const tw_gpu_window *w, double host_s, tw_run_report *rep) {
  rep->window_planes = w->st.W;
  rep->planes_in = w->st.planes_in, rep->planes_out = w->st.planes_out;
  rep->bytes_in = w->st.bytes_in, rep->bytes_out = w->st.bytes_out;
  rep->c2_planes_reused = w->st.c2_reused;
  const int ns = w->st.nstreams > 0 ? w->st.nstreams : 1;
  rep->copy_wait_frac = host_s > 0 ? w->st.wait_s / (host_s * ns) : 0.0;
}

tw_status tw_gpu_window_too_small(tw_error *err, const tw_problem *pb, uint64_t cap, int automatic, int planes,
                                  uint64_t bytes, double whole, const char *params) {
  char b1[32], b2[32], b3[32];
  // Without solver.tower_height the kernels already tried every height down to 1 (tw_window_fit_height).
  const char *lower = pb->tower_height ? " or lower solver.tower_height" : "";
  if (automatic)
    return tw_error_set(err, TW_ENOMEM, "the grid does not fit the GPU's free memory (%s) and the smallest window, "
                        "%d x-planes of %d x %d cells (%s, %s), does not either; use a GPU with more memory%s, or "
                        "kernel cpu-diamond", tw_format_bytes((double)cap, b1, sizeof b1), planes, pb->g.N[1],
                        pb->g.N[2], tw_format_bytes((double)bytes, b2, sizeof b2), params, lower);
  const uint64_t in_core = (uint64_t)ceil(whole);  // a cap of at least the fields: no window at all
  if (in_core <= bytes)
    return tw_error_set(err, TW_ERANGE, "solver.device_memory = %s is too small for this job: the smallest cap that "
                        "works is %llu bytes (%s: the whole grid, %d x-planes of %d x %d cells, two levels and c²dt², "
                        "in core; the smallest window, %d x-planes, takes %s) for order %d, %s; raise "
                        "solver.device_memory", tw_format_bytes((double)cap, b1, sizeof b1), (unsigned long long)in_core,
                        tw_format_bytes((double)in_core, b2, sizeof b2), pb->g.N[0], pb->g.N[1], pb->g.N[2], planes,
                        tw_format_bytes((double)bytes, b3, sizeof b3), pb->order, params);
  return tw_error_set(err, TW_ERANGE, "solver.device_memory = %s is too small for this job: the smallest cap that "
                      "works is %llu bytes (%s: a window of %d x-planes of %d x %d cells, two levels and c²dt²) for "
                      "order %d, %s; raise solver.device_memory%s",
                      tw_format_bytes((double)cap, b1, sizeof b1), (unsigned long long)bytes,
                      tw_format_bytes((double)bytes, b2, sizeof b2), planes, pb->g.N[1], pb->g.N[2], pb->order, params,
                      lower);
}

tw_status tw_gpu_window_decide(const tw_problem *pb, double need, uint64_t *cap, int *automatic, tw_error *err) {
  size_t fr = 0, tot = 0;
  TW_CUDA_TRY(err, cudaMemGetInfo(&fr, &tot));
  const double reserve = tw_gpu_reserve_bytes((double)tot);
  const double avail = (double)fr > reserve ? (double)fr - reserve : 0.0;
  *cap = 0;
  *automatic = 0;
  if (pb->device_memory && need > (double)pb->device_memory) {
    *cap = pb->device_memory;
  } else if (need > avail) {
    *cap = (uint64_t)avail;
    *automatic = 1;
    if (!*cap) *cap = 1;  // nothing free: the window's own check reports the smallest it needs
  }
  return TW_OK;
}

tw_status tw_gpu_snapshot(const tw_dev_layout &L, const float *p, const tw_gpu_window *w, long level,
                          cudaStream_t stream, float **stage, size_t *stage_cap, const int lo[3], const int cnt[3],
                          int dec, float *out, tw_error *err) {
  if (dec < 1) return tw_error_set(err, TW_EINVAL, "snapshot decimation %d < 1", dec);
  for (int a = 0; a < 3; a++)
    if (cnt[a] < 1 || lo[a] < 0 || lo[a] + (long)(cnt[a] - 1) * dec >= L.N[a])
      return tw_error_set(err, TW_EINVAL, "snapshot box axis %d: first %d, count %d, step %d is outside 0..%d", a,
                          lo[a], cnt[a], dec, L.N[a] - 1);
  if (w) {  // at a block boundary the host holds the whole field (every plane went back)
    tw_gpu_window_extract(w, level, lo, cnt, dec, out);
    return TW_OK;
  }
  const size_t total = (size_t)cnt[0] * (size_t)cnt[1] * (size_t)cnt[2];
  tw_status st = tw_dev_ensure(stage, stage_cap, total, "snapshot staging", err);
  if (st) return st;
  const size_t blocks = (total + 255) / 256 < 4096 ? (total + 255) / 256 : 4096;  // grid-stride beyond
  tw_dev_extract_kernel<<<(unsigned)blocks, 256, 0, stream>>>(p, L, lo[0], lo[1], lo[2], cnt[0], cnt[1], cnt[2], dec,
                                                             *stage);
  TW_CUDA_LAUNCHED(err, "tw_dev_extract_kernel");
  TW_CUDA_TRY(err, cudaMemcpyAsync(out, *stage, total * sizeof(float), cudaMemcpyDeviceToHost, stream));
  TW_CUDA_TRY(err, cudaStreamSynchronize(stream));
  return TW_OK;
}

tw_status tw_gpu_checkpoint_planes(const tw_dev_layout &L, float *const p[2], tw_gpu_window *w, long level, int x0,
                                   int nx, float *cur, float *prev, int load, cudaStream_t stream, tw_error *err) {
  if (x0 < 0 || nx < 0 || x0 + nx > L.N[0])
    return tw_error_set(err, TW_EINTERNAL, "checkpoint planes %d..%d outside the grid's %d", x0, x0 + nx - 1, L.N[0]);
  const size_t plane = (size_t)L.N[1] * (size_t)L.N[2], bytes = (size_t)nx * plane * sizeof(float);
  float *host[2] = {cur, prev};
  for (int a = 0; a < 2; a++) {
    const int arr = (int)((level + a) % 2);  // a = 0: level t in array t % 2; a = 1: level t − 1
    if (w) {
      float *h = tw_gpu_window_level(w, arr) + (size_t)x0 * plane;
      memcpy(load ? h : host[a], load ? host[a] : h, bytes);
      continue;
    }
    const size_t row = (size_t)L.N[2] * sizeof(float), pitch = (size_t)L.Nzp * sizeof(float);
    for (int i = 0; i < nx; i++) {
      float *d = p[arr] + (long long)(x0 + i) * L.sx, *h = host[a] + (size_t)i * plane;
      if (load)
        TW_CUDA_TRY(err, cudaMemcpy2DAsync(d, pitch, h, row, row, (size_t)L.N[1], cudaMemcpyHostToDevice, stream));
      else
        TW_CUDA_TRY(err, cudaMemcpy2DAsync(h, row, d, pitch, row, (size_t)L.N[1], cudaMemcpyDeviceToHost, stream));
    }
  }
  TW_CUDA_TRY(err, cudaStreamSynchronize(stream));
  return TW_OK;
}

// ---------------------------------------------------------------------------------- non-finite scan

namespace {

// One warp per (x, y) row of planes [x0, x1), lanes along z (coalesced); a count and the smallest
// linear index per warp, then one atomic pair per warp that found any.
__global__ void nonfinite_kernel(const float *__restrict__ p, const tw_dev_layout L, int x0, int x1,
                                 unsigned long long *__restrict__ nf) {
  const int lane = threadIdx.x & 31;
  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  const long long rows = (long long)(x1 - x0) * L.N[1];
  unsigned count = 0;
  unsigned long long first = ~0ull;
  for (long long r = warp; r < rows; r += warps) {
    const int x = x0 + (int)(r / L.N[1]), y = (int)(r % L.N[1]);
    const float *row = p + (long long)x * L.sx + (long long)y * L.Nzp;
    for (int k = lane; k < L.N[2]; k += 32) {
      const unsigned u = __float_as_uint(row[k]);
      if ((u & 0x7f800000u) == 0x7f800000u) {
        count++;
        const unsigned long long idx = ((unsigned long long)x * (unsigned)L.N[1] + (unsigned)y) * (unsigned)L.N[2] + k;
        first = idx < first ? idx : first;
      }
    }
  }
  for (int o = 16; o; o >>= 1) {
    count += __shfl_down_sync(0xffffffffu, count, o);
    const unsigned long long f = __shfl_down_sync(0xffffffffu, first, o);
    first = f < first ? f : first;
  }
  if (lane == 0 && count) {
    atomicAdd(&nf[0], (unsigned long long)count);
    atomicMin(&nf[1], first);
  }
}

}  // namespace

tw_status tw_gpu_nonfinite_reset(unsigned long long *nf, cudaStream_t stream, tw_error *err) {
  TW_CUDA_TRY(err, cudaMemsetAsync(nf, 0, sizeof *nf, stream));
  TW_CUDA_TRY(err, cudaMemsetAsync(nf + 1, 0xff, sizeof *nf, stream));
  return TW_OK;
}

tw_status tw_gpu_nonfinite_scan(unsigned long long *nf, const tw_dev_layout &L, const float *p, int x0, int x1,
                                cudaStream_t stream, tw_error *err) {
  const long long rows = (long long)(x1 - x0) * L.N[1];
  if (rows <= 0) return TW_OK;
  const long long blocks = (rows + 7) / 8 < 2048 ? (rows + 7) / 8 : 2048;  // 8 warps per block, grid-stride beyond
  nonfinite_kernel<<<(unsigned)blocks, 256, 0, stream>>>(p, L, x0, x1, nf);
  TW_CUDA_LAUNCHED(err, "nonfinite_kernel");
  return TW_OK;
}

tw_status tw_gpu_find_nonfinite(const tw_dev_layout &L, const float *p, tw_gpu_window *w, unsigned long long **nf,
                                cudaStream_t stream, long long *count, int cell[3], tw_error *err) {
  tw_status st;
  unsigned long long *d = w ? w->nf : *nf;
  if (!w) {
    if (!d) {
      TW_CUDA_TRY(err, cudaMalloc((void **)nf, 2 * sizeof(unsigned long long)));
      d = *nf;
      if ((st = tw_gpu_nonfinite_reset(d, stream, err))) return st;
    }
    if ((st = tw_gpu_nonfinite_scan(d, L, p, 0, L.N[0], stream, err))) return st;
  }
  unsigned long long h[2];
  TW_CUDA_TRY(err, cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, stream));
  TW_CUDA_TRY(err, cudaStreamSynchronize(stream));
  if ((st = tw_gpu_nonfinite_reset(d, stream, err))) return st;
  *count = (long long)h[0];
  if (h[0]) {
    const unsigned long long N1 = (unsigned)L.N[1], N2 = (unsigned)L.N[2];
    cell[2] = (int)(h[1] % N2);
    cell[1] = (int)(h[1] / N2 % N1);
    cell[0] = (int)(h[1] / N2 / N1);
  }
  return TW_OK;
}

tw_status tw_gpu_advance_begin(const tw_problem *pb, long level, long t0, long n, float **taps, size_t *cap,
                               tw_gpu_samples *q, long *first, long *count, tw_error *err) {
  q->nmark = 0;
  if (t0 != level)
    return tw_error_set(err, TW_EINTERNAL, "advance from level %ld, but the field is at level %ld", t0, level);
  if (n < 0 || t0 + n > pb->steps)
    return tw_error_set(err, TW_EINTERNAL, "advance %ld steps from level %ld: past the last step %ld", n, t0,
                        pb->steps);
  tw_samples_in(pb, t0, n, first, count);
  return tw_dev_ensure(taps, cap, (size_t)*count * (size_t)pb->ntap, "receiver samples", err);
}

tw_status tw_gpu_samples_init(tw_gpu_samples *q, tw_error *err) {
  TW_CUDA_TRY(err, cudaStreamCreateWithFlags(&q->stream, cudaStreamNonBlocking));
  return TW_OK;
}

void tw_gpu_samples_free(tw_gpu_samples *q) {
  if (q->stream) cudaStreamDestroy(q->stream);
  for (int k = 0; k < q->nev; k++) cudaEventDestroy(q->ev[k]);
  q->stream = NULL;
  q->nev = q->nmark = 0;
}

tw_status tw_gpu_samples_mark(tw_gpu_samples *q, const tw_problem *pb, cudaStream_t work, long level, tw_error *err) {
  if (!pb->ntap) return TW_OK;
  const int k = q->nmark < TW_GPU_SAMPLE_MARKS ? q->nmark++ : TW_GPU_SAMPLE_MARKS - 1;
  if (k == q->nev) {
    TW_CUDA_TRY(err, cudaEventCreateWithFlags(&q->ev[k], cudaEventDisableTiming));
    q->nev++;
  }
  TW_CUDA_TRY(err, cudaEventRecord(q->ev[k], work));
  q->level[k] = level;
  return TW_OK;
}

// The marked samples, in order; *rows: the samples now on the host.
static tw_status samples_send(tw_gpu_samples *q, const tw_problem *pb, long first, long count, float *taps,
                              const float *dev_taps, long *rows, tw_error *err) {
  const size_t ntap = (size_t)pb->ntap;
  for (int k = 0; ntap && k < q->nmark; k++) {
    const long upto = std::min(count, q->level[k] / pb->interval - first + 1);  // rows final at the mark
    if (upto <= *rows) continue;
    TW_CUDA_TRY(err, cudaStreamWaitEvent(q->stream, q->ev[k], 0));
    TW_CUDA_TRY(err, cudaMemcpyAsync(taps + *rows * ntap, dev_taps + *rows * ntap,
                                     (size_t)(upto - *rows) * ntap * sizeof(float), cudaMemcpyDeviceToHost, q->stream));
    *rows = upto;
  }
  return TW_OK;
}

tw_status tw_gpu_advance_end(cudaStream_t stream, tw_gpu_samples *q, const tw_problem *pb, long first, long count,
                             float *taps, const float *dev_taps, tw_gpu_window *w, double t_start, double *win_s,
                             tw_error *err) {
  long rows = 0;
  tw_status st = samples_send(q, pb, first, count, taps, dev_taps, &rows, err);
  q->nmark = 0;
  // (a copy into pageable memory is done when it returns: this wait matters on the error path, and
  // would for a pinned buffer)
  const cudaError_t se = rows ? cudaStreamSynchronize(q->stream) : cudaSuccess;
  if (st) return st;
  if (se != cudaSuccess) return tw_cuda_fail(err, se, "cudaStreamSynchronize (receiver samples)", __FILE__, __LINE__);
  const size_t ntap = (size_t)pb->ntap, n = (size_t)(count - rows) * ntap;
  if (n) TW_CUDA_TRY(err, cudaMemcpyAsync(taps + rows * ntap, dev_taps + rows * ntap, n * sizeof(float),
                                          cudaMemcpyDeviceToHost, stream));
  TW_CUDA_TRY(err, cudaStreamSynchronize(stream));
  if (w) {
    tw_status st2 = tw_gpu_window_finish(w, err);
    if (st2) return st2;
    *win_s += tw_wall_seconds() - t_start;
  }
  return TW_OK;
}
