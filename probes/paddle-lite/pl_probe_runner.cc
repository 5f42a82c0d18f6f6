// pl_probe_runner: runs a Paddle-Lite model (normally the probed.nb that `cldiff instrument`
// wrote) once through Paddle-Lite's public C++ API (MobileConfig, CreatePaddlePredictor,
// GetInput/GetOutput) and saves every output as a .npy file, for `cldiff import`.
//
//   pl_probe_runner probed.nb IN_DIR OUT_DIR [--threads N] [--power-mode high|low|full|no_bind]
//                   [--opencl-precision auto|fp16|fp32] [--warmup N] [--repeat N] [--trace FILE]
//                   [--op-times FILE]
//
// IN_DIR/input_<k>.npy is model input k (feed col order; float32, int32, int64, uint8 or
// int8, little-endian, C order); OUT_DIR/out_<i>.npy is GetOutput(i) for every output
// (fetch col order), and OUT_DIR/run.txt says what ran. Exit codes: 0 ok, 2 usage,
// 3 bad input file, 4 OpenCL asked for but unusable. Part of cldiff (docs/paddle-lite.md);
// written against the API of lite/api/paddle_api.h, nothing of Paddle-Lite is copied here.
//
// --trace FILE: a line "op K" is appended to FILE (unbuffered) as the K-th instruction of the
// measured Run() starts (K counts from 0; feed and fetch ops are not instructions that run), so
// that a run that dies says in which instruction (docs/paddle-lite-engines.md "An engine that
// dies"). It needs the library to call its instruction runner through its dynamic symbol table
// (the x86 SDKs do; the armv8 tiny publish hides it): the runner defines that one symbol, counts,
// and calls the library's own. Where the library does not call it the file stays empty.
//
// --warmup W --repeat N: W untimed Run() calls, then N timed ones (default 1); run.txt's run_ms is
// the median of the N (the one run's time when N is 1, as before), and with N > 1 run.txt also
// has runs, run_ms_min and run_ms_max. --trace covers the first timed run.
//
// --op-times FILE: the wall time of every top-level instruction of each timed Run(), through the
// same hook (feed and fetch are not instructions that run; a sub-block's instructions count in
// their while/conditional_block op's time). FILE gets "runs N", "instructions K" (the number of
// top-level instructions every timed run ran; "instructions varies MIN MAX" and no op lines when
// the runs differ; 0 when the library does not call the hook), "run_ms"/"run_ms_min"/"run_ms_max"
// of these runs (the hook's clock reads inside them), one "run R TOTAL_MS OPS_MS" per timed run
// (its time and the sum of its instructions' times) and one "op K MEDIAN_MS MIN_MS MAX_MS" per
// instruction K over the N runs. Timing every op costs two clock reads per op: time the run
// without --op-times in a process of its own (scripts/bench_cpu.sh does).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paddle_api.h"

using paddle::lite_api::MobileConfig;
using paddle::lite_api::PaddlePredictor;
using paddle::lite_api::PrecisionType;
using paddle::lite_api::Tensor;

namespace {

struct Npy {
  std::string descr;  // "<f4"
  std::vector<int64_t> shape;
  std::vector<char> data;
};

// --trace: the file, the next instruction's number, the nesting depth (a while or
// conditional_block op runs its sub-block's instructions inside its own: only the top level counts)
int g_trace_fd = -1;
long g_trace_next = 0;
int g_trace_depth = 0;
// --op-times: on during the timed runs; this run's time of each top-level instruction, ms (the
// capacity is reserved before the runs, so the hook does not allocate while timing)
bool g_time_ops = false;
std::vector<double> g_op_ms;

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// median of a copy (the mean of the middle two for an even count); min and max
void stats(std::vector<double> v, double* med, double* lo, double* hi) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  *med = n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0.0;
  *lo = n ? v.front() : 0.0;
  *hi = n ? v.back() : 0.0;
}

int fail(int code, const std::string& msg) {
  std::fprintf(stderr, "pl_probe_runner: %s\n", msg.c_str());
  return code;
}

size_t descr_size(const std::string& d) {
  if (d.size() < 3) return 0;
  return static_cast<size_t>(std::atoi(d.c_str() + 2));
}

// Reads a .npy (versions 1.0-3.0) header and data; returns an empty message on success.
std::string read_npy(const std::string& path, Npy* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open " + path;
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) return path + " is not a .npy file";
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) return path + ": short header";
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) return path + ": short header";
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  if (hlen > (1u << 20)) return path + ": header too long";
  std::string h(hlen, '\0');
  if (!f.read(&h[0], hlen)) return path + ": short header";
  size_t p = h.find("'descr'");
  size_t q = p == std::string::npos ? p : h.find('\'', h.find(':', p) + 1);
  size_t r = q == std::string::npos ? q : h.find('\'', q + 1);
  if (r == std::string::npos) return path + ": no descr in the header";
  out->descr = h.substr(q + 1, r - q - 1);
  if (h.find("'fortran_order': True") != std::string::npos) return path + ": Fortran order is not supported";
  p = h.find("'shape'");
  q = p == std::string::npos ? p : h.find('(', p);
  r = q == std::string::npos ? q : h.find(')', q);
  if (r == std::string::npos) return path + ": no shape in the header";
  std::stringstream ss(h.substr(q + 1, r - q - 1));
  std::string item;
  out->shape.clear();
  int64_t numel = 1;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    int64_t d = std::atoll(item.c_str());
    if (d < 0) return path + ": negative dimension";
    out->shape.push_back(d);
    numel *= d;
  }
  size_t es = descr_size(out->descr);
  if (!es || (out->descr[0] != '<' && out->descr[0] != '|')) return path + ": unsupported dtype " + out->descr;
  out->data.resize(static_cast<size_t>(numel) * es);
  if (!out->data.empty() && !f.read(out->data.data(), static_cast<std::streamsize>(out->data.size())))
    return path + ": fewer data bytes than the shape needs";
  return "";
}

bool write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
               const void* data, size_t nbytes) {
  std::string sh = "(";
  for (size_t i = 0; i < shape.size(); i++) sh += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  sh += ")";
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + sh + ", }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) return false;
  f.write("\x93NUMPY\x01\x00", 8);
  unsigned char l[2] = {static_cast<unsigned char>(h.size() & 0xff), static_cast<unsigned char>(h.size() >> 8)};
  f.write(reinterpret_cast<const char*>(l), 2);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  if (nbytes) f.write(static_cast<const char*>(data), static_cast<std::streamsize>(nbytes));
  return static_cast<bool>(f);
}

template <typename T>
void fill_input(Tensor* t, const Npy& n) {
  std::memcpy(t->mutable_data<T>(), n.data.data(), n.data.size());
}

// --op-times FILE (the format: the header above); returns an empty message on success
std::string write_op_times(const std::string& path, const std::vector<double>& runs_ms,
                           const std::vector<std::vector<double>>& op_runs, const std::vector<long>& inst_counts) {
  std::ofstream f(path);
  if (!f) return "cannot write the op-times file " + path;
  long lo = *std::min_element(inst_counts.begin(), inst_counts.end());
  long hi = *std::max_element(inst_counts.begin(), inst_counts.end());
  double med, mn, mx;
  stats(runs_ms, &med, &mn, &mx);
  f << "# pl_probe_runner --op-times: ms of each top-level instruction of the timed runs (feed and fetch do not "
       "run as instructions)\nruns "
    << runs_ms.size() << "\n";
  if (lo != hi)
    f << "instructions varies " << lo << " " << hi << "\n";
  else
    f << "instructions " << lo << "\n";
  f << "run_ms " << med << "\nrun_ms_min " << mn << "\nrun_ms_max " << mx << "\n";
  for (size_t r = 0; r < runs_ms.size(); r++) {
    double sum = 0;
    for (double x : op_runs[r]) sum += x;
    f << "run " << r << " " << runs_ms[r] << " " << sum << "\n";
  }
  if (lo == hi) {
    for (long k = 0; k < lo; k++) {
      std::vector<double> v;
      for (const std::vector<double>& o : op_runs) v.push_back(o[static_cast<size_t>(k)]);
      stats(v, &med, &mn, &mx);
      f << "op " << k << " " << med << " " << mn << " " << mx << "\n";
    }
  }
  if (lo == 0)
    std::fprintf(stderr,
                 "pl_probe_runner: no instruction reached the runner's hook (this library does not call "
                 "Instruction::Run through its dynamic symbol table): %s has no op times\n",
                 path.c_str());
  else if (lo != hi)
    std::fprintf(stderr, "pl_probe_runner: the timed runs ran %ld to %ld instructions: %s has no op lines\n", lo, hi,
                 path.c_str());
  return f ? "" : "cannot write the op-times file " + path;
}

}  // namespace

// The library's instruction runner (one call per op of the program, in order), by its exported
// C++ name; this definition is the one the library's own calls reach when it exports the name.
extern "C" void pl_runner_instruction_run(void* inst) __asm__("_ZN6paddle4lite11Instruction3RunEv");
extern "C" void pl_runner_instruction_run(void* inst) {
  typedef void (*run_fn)(void*);
  static run_fn next = nullptr;
  if (!next) next = reinterpret_cast<run_fn>(dlsym(RTLD_NEXT, "_ZN6paddle4lite11Instruction3RunEv"));
  if (!next) {
    std::fprintf(stderr, "pl_probe_runner: the library's Instruction::Run was not found (dlsym: %s)\n", dlerror());
    std::abort();
  }
  bool top = g_trace_depth == 0;
  if (top) {
    if (g_trace_fd >= 0) {
      char line[32];
      int n = std::snprintf(line, sizeof line, "op %ld\n", g_trace_next);
      if (write(g_trace_fd, line, static_cast<size_t>(n)) != n) {
        close(g_trace_fd);  // a full disk: no trace rather than a wrong one
        g_trace_fd = -1;
      }
    }
    g_trace_next++;
  }
  g_trace_depth++;
  if (top && g_time_ops) {
    auto a = std::chrono::steady_clock::now();
    next(inst);
    auto b = std::chrono::steady_clock::now();
    g_op_ms.push_back(ms_between(a, b));
  } else {
    next(inst);
  }
  g_trace_depth--;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s probed.nb IN_DIR OUT_DIR [--threads N] [--power-mode high|low|full|no_bind]\n"
                 "          [--opencl-precision auto|fp16|fp32] [--warmup N] [--repeat N] [--trace FILE]\n"
                 "          [--op-times FILE]\n",
                 argv[0]);
    return 2;
  }
  std::string model = argv[1], in_dir = argv[2], out_dir = argv[3], cl_prec, trace, op_times;
  int threads = 1, warmup = 0, repeat = 1;
  std::string power = "no_bind";
  for (int i = 4; i < argc; i++) {
    std::string a = argv[i];
    if (i + 1 >= argc) return fail(2, "option " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--threads") threads = std::atoi(v.c_str());
    else if (a == "--power-mode") power = v;
    else if (a == "--opencl-precision") cl_prec = v;
    else if (a == "--warmup") warmup = std::atoi(v.c_str());
    else if (a == "--trace") trace = v;
    else if (a == "--op-times") op_times = v;
    else if (a == "--repeat") {
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || n < 1 || n > 1000000)
        return fail(2, "--repeat " + v + ": give a whole number of timed runs from 1 to 1000000");
      repeat = static_cast<int>(n);
    }
    else return fail(2, "unknown option " + a);
  }
  MobileConfig config;
  config.set_model_from_file(model);
  config.set_threads(threads > 0 ? threads : 1);
  using paddle::lite_api::PowerMode;
  config.set_power_mode(power == "high" ? PowerMode::LITE_POWER_HIGH
                        : power == "low" ? PowerMode::LITE_POWER_LOW
                        : power == "full" ? PowerMode::LITE_POWER_FULL
                                          : PowerMode::LITE_POWER_NO_BIND);
  if (!cl_prec.empty()) {
    // Only for OpenCL models: say so when the device cannot run them (the runtime never
    // falls back to ARM on its own, docs/nb-format.md §5.3).
    if (!paddle::lite_api::IsOpenCLBackendValid()) return fail(4, "OpenCL asked for but IsOpenCLBackendValid() is false");
    using paddle::lite_api::CLPrecisionType;
    config.set_opencl_precision(cl_prec == "fp16"   ? CLPrecisionType::CL_PRECISION_FP16
                                : cl_prec == "fp32" ? CLPrecisionType::CL_PRECISION_FP32
                                                    : CLPrecisionType::CL_PRECISION_AUTO);
  }
  mkdir(out_dir.c_str(), 0755);  // may exist already; a real failure shows when writing
  // Phase markers on stderr: a runtime that dies says in which step (cldiff reads them).
  std::fprintf(stderr, "pl_probe_runner: phase load\n");
  std::fflush(stderr);
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<PaddlePredictor> pred = paddle::lite_api::CreatePaddlePredictor<MobileConfig>(config);
  auto t1 = std::chrono::steady_clock::now();
  std::vector<std::string> in_names = pred->GetInputNames();
  for (size_t k = 0; k < in_names.size(); k++) {
    Npy n;
    std::string path = in_dir + "/input_" + std::to_string(k) + ".npy";
    std::string e = read_npy(path, &n);
    if (!e.empty()) return fail(3, "input " + std::to_string(k) + " ('" + in_names[k] + "'): " + e);
    std::unique_ptr<Tensor> t = pred->GetInput(static_cast<int>(k));
    t->Resize(n.shape);
    const std::string& d = n.descr;
    if (d == "<f4") fill_input<float>(t.get(), n);
    else if (d == "<i4") fill_input<int32_t>(t.get(), n);
    else if (d == "<i8") fill_input<int64_t>(t.get(), n);
    else if (d == "|u1") fill_input<uint8_t>(t.get(), n);
    else if (d == "|i1") fill_input<int8_t>(t.get(), n);
    else return fail(3, path + ": dtype " + d + " is not a Paddle-Lite input type (float32, int32, int64, uint8, int8)");
  }
  std::fprintf(stderr, "pl_probe_runner: phase run\n");
  std::fflush(stderr);
  for (int w = 0; w < warmup; w++) pred->Run();
  if (!trace.empty()) {
    g_trace_fd = open(trace.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (g_trace_fd < 0) return fail(2, "cannot write the trace file " + trace);
  }
  std::vector<double> runs_ms;                // each timed run
  std::vector<std::vector<double>> op_runs;  // --op-times: each timed run's instruction times
  std::vector<long> inst_counts;              // top-level instructions of each timed run
  g_time_ops = !op_times.empty();
  if (g_time_ops) g_op_ms.reserve(1 << 16);
  for (int r = 0; r < repeat; r++) {
    g_trace_next = 0;
    g_op_ms.clear();
    auto t2 = std::chrono::steady_clock::now();
    pred->Run();
    auto t3 = std::chrono::steady_clock::now();
    if (g_trace_fd >= 0) close(g_trace_fd);  // the first timed run only
    g_trace_fd = -1;
    runs_ms.push_back(ms_between(t2, t3));
    inst_counts.push_back(g_trace_next);
    if (g_time_ops) op_runs.push_back(g_op_ms);
  }
  g_time_ops = false;
  double run_med, run_min, run_max;
  stats(runs_ms, &run_med, &run_min, &run_max);
  if (!op_times.empty()) {
    std::string e = write_op_times(op_times, runs_ms, op_runs, inst_counts);
    if (!e.empty()) return fail(2, e);
  }
  std::fprintf(stderr, "pl_probe_runner: phase fetch\n");
  std::fflush(stderr);
  std::vector<std::string> out_names = pred->GetOutputNames();
  std::ofstream info(out_dir + "/run.txt");
  info << "model " << model << "\nversion " << pred->GetVersion() << "\nthreads " << threads << "\npower_mode " << power
       << "\nopencl_precision " << (cl_prec.empty() ? "-" : cl_prec) << "\nload_ms "
       << ms_between(t0, t1) << "\nrun_ms " << run_med << "\n";
  if (repeat > 1) info << "runs " << repeat << "\nrun_ms_min " << run_min << "\nrun_ms_max " << run_max << "\n";
  info << "outputs " << out_names.size() << "\n";
  for (size_t i = 0; i < out_names.size(); i++) {
    std::unique_ptr<const Tensor> t = pred->GetOutput(static_cast<int>(i));
    std::vector<int64_t> shape = t->shape();
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    std::string descr;
    size_t es = 0;
    const void* p = nullptr;
    switch (t->precision()) {
      case PrecisionType::kFloat: descr = "<f4"; es = 4; p = t->data<float>(); break;
      case PrecisionType::kInt32: descr = "<i4"; es = 4; p = t->data<int32_t>(); break;
      case PrecisionType::kInt64: descr = "<i8"; es = 8; p = t->data<int64_t>(); break;
      case PrecisionType::kInt8: descr = "|i1"; es = 1; p = t->data<int8_t>(); break;
      case PrecisionType::kUInt8: descr = "|u1"; es = 1; p = t->data<uint8_t>(); break;
      case PrecisionType::kBool: descr = "|b1"; es = 1; p = t->data<bool>(); break;
      default: descr = "<f4"; es = 4; p = t->data<float>(); break;  // kAny etc.: float data
    }
    std::string path = out_dir + "/out_" + std::to_string(i) + ".npy";
    if (!p && numel > 0) {
      // An output Paddle-Lite does not hand to the host (no host copy of a device tensor):
      // listed as unavailable, the others are still saved.
      info << "out_" << i << " " << out_names[i] << " unavailable\n";
      std::fprintf(stderr, "pl_probe_runner: output %zu ('%s') has no host data; skipped\n", i, out_names[i].c_str());
      continue;
    }
    if (numel < 0 || !write_npy(path, descr, shape, p, static_cast<size_t>(numel) * es)) {
      // a shape or buffer the runtime cannot hand over (seen: a device tensor fetched before
      // its copy to the host); the other outputs are still saved
      std::remove(path.c_str());
      info << "out_" << i << " " << out_names[i] << " unavailable\n";
      std::fprintf(stderr, "pl_probe_runner: output %zu ('%s', %lld values) could not be written; skipped\n", i,
                   out_names[i].c_str(), static_cast<long long>(numel));
      continue;
    }
    info << "out_" << i << " " << out_names[i] << " " << descr << "\n";
  }
  std::fprintf(stderr, "pl_probe_runner: %zu outputs saved in %s (run %.2f ms%s)\n", out_names.size(), out_dir.c_str(),
               run_med, repeat > 1 ? ", the median of the timed runs" : "");
  return 0;
}
