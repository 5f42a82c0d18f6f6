// mnn_probe_runner: runs an MNN model (.mnn) once through MNN's public C++ API (Interpreter,
// ScheduleConfig, BackendConfig, runSessionWithCallBackInfo) and saves the output of every op the
// session executes, MNN's internal raster steps included, as .npy files (docs/mnn.md).
//
//   mnn_probe_runner MODEL.mnn IN_DIR OUT_DIR --forward cpu|opencl [--threads N]
//                    [--precision low|normal|high] [--memory low|normal|high] [--power low|normal|high]
//                    [--mode buffer|image] [--tuning none|fast|normal|wide|heavy] [--shapes NAMES]
//   mnn_probe_runner --extract MODEL.mnn OUT.mnn TENSOR [NAME=d0,d1,... ...]
//
// --shapes NAMES (the shape pass, docs/mnn.md "Ops cldiff does not map"): NAMES lists tensor names,
// one a line; they become the session's saved tensors (ScheduleConfig::saveTensors), the inputs are
// fed (their shapes resize the session), the session runs once (no callbacks, nothing saved but
// shapes: control flow sizes its outputs only when it runs) and OUT_DIR/shapes.txt gets one line per
// name, "<type code> <bits> <rank> <dims...> <name>" in the layout the run hands values over in
// (CAFFE), or "- <name>" where MNN keeps no such tensor.
//
// --extract writes the op that produces TENSOR alone as a model (the repro pack of a .mnn run):
// the op as MNN stored it, its constant inputs, and a model input (named like the tensor it
// replaces, with its shape, layout and type) for every other input; NAME=dims resize the
// model's own inputs first, so the shapes follow the run's. Exit 3 when TENSOR is not an op's
// output, 6 when OUT.mnn cannot be written.
//
// IN_DIR/inputs.txt names the model's inputs, one a line, in the order of the files
// IN_DIR/input_<k>.npy (float32 / int32 / uint8 / int8, C order). OUT_DIR/ops.txt gets one line
// per output of every executed op: "<seq> <k> <where> <descr> <file> <op type> <op name>", where
// is "device" (the output lives in the GPU backend's memory) or "host"; OUT_DIR/run.txt says
// what ran: the backends MNN's session reports (getSessionInfo BACKENDS), the options, and for
// the CPU the arithmetic MNN's kernels use ("compute fp16" when MNN chose its ARMv8.2 backend:
// precision low on an aarch64 CPU with FPHP and ASIMDHP, MNN's session backend then being
// MNN_FORWARD_CPU_EXTENSION; else "compute fp32").
// Phase and op markers go to stderr before each step, so a run that dies names where.
// Exit codes: 0 ok, 2 usage, 3 bad input file or model, 4 the session is not on the backend
// asked for (MNN moved it to its CPU, or a CPU session is on another backend), 6 cannot write
// OUT_DIR. Part of cldiff; written against
// MNN's public headers, nothing of MNN is copied here.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#if defined(__linux__) && defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include <MNN/Interpreter.hpp>
#include <MNN/MNNDefine.h>
#include <MNN/Tensor.hpp>
#include <MNN/expr/Expr.hpp>
#include <MNN/expr/NeuralNetWorkOp.hpp>

namespace {

int fail(int code, const std::string& msg) {
  std::fprintf(stderr, "mnn_probe_runner: %s\n", msg.c_str());
  return code;
}

struct Npy {
  std::string descr;
  std::vector<int> shape;
  std::vector<char> data;
};

std::string read_npy(const std::string& path, Npy* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open " + path;
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) return path + " is not a .npy file";
  uint32_t hlen = 0;
  unsigned char b[4] = {0, 0, 0, 0};
  if (magic[6] == 1) {
    if (!f.read(reinterpret_cast<char*>(b), 2)) return path + ": short header";
    hlen = b[0] | (b[1] << 8);
  } else {
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
  int64_t numel = 1;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    long long d = std::atoll(item.c_str());
    if (d < 0 || d > (1 << 30)) return path + ": bad dimension";
    out->shape.push_back(static_cast<int>(d));
    numel *= d;
    if (numel > (int64_t(1) << 34)) return path + ": too large";
  }
  size_t es = out->descr.size() >= 3 ? static_cast<size_t>(std::atoi(out->descr.c_str() + 2)) : 0;
  if (!es) return path + ": unsupported dtype " + out->descr;
  out->data.resize(static_cast<size_t>(numel) * es);
  if (!out->data.empty() && !f.read(out->data.data(), static_cast<std::streamsize>(out->data.size())))
    return path + ": fewer data bytes than the shape needs";
  return "";
}

bool write_npy(const std::string& path, const std::string& descr, const std::vector<int>& shape, const void* data,
               size_t nbytes) {
  std::string sh = "(";
  for (size_t i = 0; i < shape.size(); i++)
    sh += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
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

// The numpy descr of an MNN tensor's element type; "" when not one cldiff stores.
std::string descr_of(const MNN::Tensor* t) {
  halide_type_t ty = t->getType();
  if (ty.code == halide_type_float && ty.bits == 32) return "<f4";
  if (ty.code == halide_type_int && ty.bits == 32) return "<i4";
  if (ty.code == halide_type_int && ty.bits == 8) return "|i1";
  if (ty.code == halide_type_uint && ty.bits == 8) return "|u1";
  if (ty.code == halide_type_int && ty.bits == 64) return "<i8";
  return "";
}

const char* forward_name(int f) {
  switch (f) {
    case MNN_FORWARD_CPU: return "cpu";
    case MNN_FORWARD_OPENCL: return "opencl";
    case MNN_FORWARD_VULKAN: return "vulkan";
    case MNN_FORWARD_AUTO: return "auto";
    case MNN_FORWARD_CPU_EXTENSION: return "cpu";
    default: return "other";
  }
}

// The op that writes `tensor`, alone, saved as a model (see the head of this file).
int extract_op(int argc, char** argv) {
  using namespace MNN::Express;
  if (argc < 5) return fail(2, "usage: --extract MODEL.mnn OUT.mnn TENSOR [NAME=d0,d1,... ...]");
  std::string model = argv[2], out = argv[3], tensor = argv[4];
  auto vars = Variable::loadMap(model.c_str());
  if (vars.empty()) return fail(3, "MNN cannot load the model " + model);
  auto io = Variable::getInputAndOutput(vars);
  for (int i = 5; i < argc; i++) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    if (eq == std::string::npos) return fail(2, "input shape '" + a + "' is not NAME=d0,d1,...");
    auto it = io.first.find(a.substr(0, eq));
    if (it == io.first.end()) continue;  // not a model input: its shape follows from the others
    INTS dims;
    std::stringstream ss(a.substr(eq + 1));
    std::string d;
    while (std::getline(ss, d, ',')) dims.push_back(std::atoi(d.c_str()));
    it->second->resize(dims);
  }
  auto found = vars.find(tensor);
  if (found == vars.end()) return fail(3, "no tensor '" + tensor + "' in " + model);
  EXPRP ex = found->second->expr().first;
  if (!ex || !ex->get()) return fail(3, "tensor '" + tensor + "' is a model input or a constant, not an op's output");
  std::vector<VARP> ins;
  for (const VARP& v : ex->inputs()) {
    EXPRP ie = v->expr().first;
    if (ie && !ie->get() && ie->inputType() != VARP::INPUT) {
      ins.push_back(v);  // a constant: kept as it is
      continue;
    }
    const Variable::Info* info = v->getInfo();
    if (!info) return fail(3, "the shape of '" + v->name() + "', an input of the op writing '" + tensor +
                                  "', cannot be computed (give the model's input shapes as NAME=dims)");
    VARP x = _Input(info->dim, info->order, info->type);
    x->setName(v->name());
    ins.push_back(x);
  }
  EXPRP op = Expr::create(ex->extra(), std::move(ins), ex->outputSize());
  op->setName(ex->name());
  std::vector<VARP> outs;
  for (int k = 0; k < ex->outputSize(); k++) {
    VARP y = Variable::create(op, k);
    y->setName(ex->outputName(k));
    outs.push_back(y);
  }
  Variable::save(outs, out.c_str());
  struct stat st;
  if (stat(out.c_str(), &st) != 0 || st.st_size == 0) return fail(6, "cannot write " + out);
  std::printf("extracted op '%s' (%d inputs, %d outputs) into %s\n", ex->name().c_str(), (int)ex->inputs().size(),
              ex->outputSize(), out.c_str());
  return 0;
}

// Whether this CPU offers half-precision arithmetic (AArch64 Linux: HWCAP FPHP and ASIMDHP, the
// bits MNN's CPU runtime asks for before it takes its ARMv8.2 fp16 kernels). -1: not AArch64.
int cpu_fp16arith() {
#if defined(__linux__) && defined(__aarch64__)
  unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long fphp = 1ul << 9, asimdhp = 1ul << 10;  // Linux arch/arm64 uapi hwcap.h
  return (hw & fphp) && (hw & asimdhp) ? 1 : 0;
#else
  return -1;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--extract") return extract_op(argc, argv);
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s MODEL.mnn IN_DIR OUT_DIR --forward cpu|opencl [--threads N]\n"
                 "          [--precision low|normal|high] [--memory low|normal|high] [--power low|normal|high]\n"
                 "          [--mode buffer|image] [--tuning none|fast|normal|wide|heavy] [--winograd 0-3]\n",
                 argv[0]);
    return 2;
  }
  std::string model = argv[1], in_dir = argv[2], out_dir = argv[3];
  std::string forward = "cpu", precision = "high", memory = "normal", power = "normal", mode = "buffer",
              tuning = "none", shapes;
  int threads = 1, winograd = -1;
  for (int i = 4; i < argc; i++) {
    std::string a = argv[i];
    if (i + 1 >= argc) return fail(2, "option " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--forward") forward = v;
    else if (a == "--threads") threads = std::atoi(v.c_str());
    else if (a == "--precision") precision = v;
    else if (a == "--memory") memory = v;
    else if (a == "--power") power = v;
    else if (a == "--mode") mode = v;
    else if (a == "--tuning") tuning = v;
    else if (a == "--winograd") winograd = std::atoi(v.c_str());
    else if (a == "--shapes") shapes = v;
    else return fail(2, "unknown option " + a);
  }
  auto lvl = [](const std::string& v, const char* what, int* out) {
    if (v == "normal") *out = 0;
    else if (v == "high") *out = 1;
    else if (v == "low") *out = 2;
    else {
      std::fprintf(stderr, "mnn_probe_runner: %s '%s' is not low, normal or high\n", what, v.c_str());
      return false;
    }
    return true;
  };
  int prec = 0, mem = 0, pow = 0;
  if (!lvl(precision, "precision", &prec) || !lvl(memory, "memory", &mem) || !lvl(power, "power", &pow)) return 2;
  if (forward != "cpu" && forward != "opencl") return fail(2, "--forward must be cpu or opencl");
  if (mode != "buffer" && mode != "image") return fail(2, "--mode must be buffer or image");
  int tune = tuning == "none" ? MNN_GPU_TUNING_NONE
             : tuning == "fast" ? MNN_GPU_TUNING_FAST
             : tuning == "normal" ? MNN_GPU_TUNING_NORMAL
             : tuning == "wide" ? MNN_GPU_TUNING_WIDE
             : tuning == "heavy" ? MNN_GPU_TUNING_HEAVY
                                 : -1;
  if (tune < 0) return fail(2, "--tuning must be none, fast, normal, wide or heavy");
  mkdir(out_dir.c_str(), 0755);
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // MNN logs on stdout: keep its lines in order with ours
  std::fprintf(stderr, "mnn_probe_runner: phase load\n");
  std::fflush(stderr);
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<MNN::Interpreter> net(MNN::Interpreter::createFromFile(model.c_str()));
  if (!net) return fail(3, "MNN cannot load the model " + model);
  MNN::ScheduleConfig cfg;
  MNN::BackendConfig bc;
  bc.precision = static_cast<MNN::BackendConfig::PrecisionMode>(prec);
  bc.memory = static_cast<MNN::BackendConfig::MemoryMode>(mem);
  bc.power = static_cast<MNN::BackendConfig::PowerMode>(pow);
  cfg.backendConfig = &bc;
  cfg.type = forward == "opencl" ? MNN_FORWARD_OPENCL : MNN_FORWARD_CPU;
  cfg.backupType = MNN_FORWARD_CPU;
  std::vector<std::string> shape_names;
  if (!shapes.empty()) {
    std::ifstream sn(shapes);
    if (!sn) return fail(3, "cannot read " + shapes);
    for (std::string l; std::getline(sn, l);)
      if (!l.empty()) shape_names.push_back(l);
    cfg.saveTensors = shape_names;
  }
  if (forward == "opencl")
    cfg.mode = (mode == "image" ? MNN_GPU_MEMORY_IMAGE : MNN_GPU_MEMORY_BUFFER) | tune;
  else
    cfg.numThread = threads > 0 ? threads : 1;
  // MNN's CPU picks Winograd for 3x3 convolutions by cost unless this hint is 0 (-1: MNN's default)
  if (winograd >= 0) net->setSessionHint(MNN::Interpreter::WINOGRAD_MEMORY_LEVEL, winograd);
  std::fprintf(stderr, "mnn_probe_runner: phase session\n");
  std::fflush(stderr);
  MNN::Session* s = net->createSession(cfg);
  if (!s) return fail(4, "MNN could not create a session for forward type " + forward);
  int backends[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  bool have_info = net->getSessionInfo(s, MNN::Interpreter::BACKENDS, backends);
  auto t1 = std::chrono::steady_clock::now();
  std::ofstream info(out_dir + "/run.txt");
  info << "model " << model << "\nmnn_version " << MNN::getVersion() << "\nforward_asked " << forward
       << "\nsession_backend " << (have_info ? forward_name(backends[0]) : "?") << " " << backends[0]
       << "\nprecision " << precision << "\nmemory " << memory << "\npower " << power << "\n";
  if (forward == "opencl") info << "gpu_mode " << mode << "\ntuning " << tuning << "\n";
  else info << "threads " << cfg.numThread << "\nwinograd " << (winograd < 0 ? std::string("default") : std::to_string(winograd)) << "\n";
  int fp16 = cpu_fp16arith();
  if (fp16 >= 0) info << "cpu_fp16arith " << fp16 << "\n";
  if (forward == "cpu" && have_info) {
    // MNN's CPU runtime makes its ARMv8.2 backend (type MNN_FORWARD_CPU_EXTENSION, fp16 storage
    // and arithmetic) for precision low where the CPU has half arithmetic; on x86 the same type
    // is its AVX2/AVX512 backend, float arithmetic
    bool ext = backends[0] == MNN_FORWARD_CPU_EXTENSION;
#if defined(__aarch64__)
    bool half = ext && precision == "low";
    info << "compute " << (half ? "fp16" : "fp32") << "\ncpu_kernels "
         << (half ? "arm82-fp16" : ext ? "arm64-extension-fp32" : "arm64-fp32") << "\n";
#else
    info << "compute fp32\ncpu_kernels " << (ext ? "x86-simd-fp32" : "x86-fp32") << "\n";
#endif
  }
  info.flush();
  if (forward == "opencl" && (!have_info || backends[0] != MNN_FORWARD_OPENCL))
    return fail(4, std::string("MNN moved the session to its ") + (have_info ? forward_name(backends[0]) : "?") +
                       " backend (getSessionInfo BACKENDS " + std::to_string(backends[0]) +
                       "): OpenCL was asked for but MNN found no usable OpenCL device or runtime; "
                       "nothing of this run ran on OpenCL");
  if (forward == "cpu" && (!have_info || (backends[0] != MNN_FORWARD_CPU && backends[0] != MNN_FORWARD_CPU_EXTENSION)))
    return fail(4, std::string("MNN put the CPU session on its ") + (have_info ? forward_name(backends[0]) : "?") +
                       " backend (getSessionInfo BACKENDS " + std::to_string(backends[0]) +
                       "), not on its CPU (type 0, or 13 for its ARMv8.2 / AVX backends)");
  // inputs
  std::ifstream names(in_dir + "/inputs.txt");
  std::string nm;
  for (int k = 0; std::getline(names, nm); k++) {
    if (nm.empty()) continue;
    Npy n;
    std::string path = in_dir + "/input_" + std::to_string(k) + ".npy";
    std::string e = read_npy(path, &n);
    if (!e.empty()) return fail(3, "input " + std::to_string(k) + " ('" + nm + "'): " + e);
    MNN::Tensor* t = net->getSessionInput(s, nm.c_str());
    if (!t) return fail(3, "the model has no input named '" + nm + "'");
    net->resizeTensor(t, n.shape);
    net->resizeSession(s);
    t = net->getSessionInput(s, nm.c_str());
    halide_type_t ty = n.descr == "<f4"   ? halide_type_of<float>()
                       : n.descr == "<i4" ? halide_type_of<int32_t>()
                       : n.descr == "|u1" ? halide_type_of<uint8_t>()
                       : n.descr == "|i1" ? halide_type_of<int8_t>()
                                          : halide_type_t(halide_type_handle, 0);
    if (ty.code == halide_type_handle) return fail(3, path + ": dtype " + n.descr + " is not an MNN input type");
    std::unique_ptr<MNN::Tensor> host(MNN::Tensor::create(n.shape, ty, nullptr, MNN::Tensor::CAFFE));
    if (host->size() != static_cast<int>(n.data.size()))
      return fail(3, path + ": " + std::to_string(n.data.size()) + " bytes, the input needs " +
                         std::to_string(host->size()));
    std::memcpy(host->buffer().host, n.data.data(), n.data.size());
    t->copyFromHostTensor(host.get());
  }
  if (!shapes.empty()) {
    // one run: control flow (While, If) sizes its outputs only when it runs
    if (net->runSession(s) != MNN::NO_ERROR) std::fprintf(stderr, "mnn_probe_runner: the shape run failed\n");
    std::ofstream so(out_dir + "/shapes.txt");
    for (const std::string& n : shape_names) {
      const MNN::Tensor* t = net->getSessionOutput(s, n.c_str());
      if (!t) {
        so << "- " << n << "\n";
        continue;
      }
      MNN::Tensor view(t, MNN::Tensor::CAFFE, false);
      std::vector<int> sh = view.shape();
      so << static_cast<int>(t->getType().code) << " " << static_cast<int>(t->getType().bits) << " " << sh.size();
      for (int d : sh) so << " " << d;
      so << " " << n << "\n";
    }
    so.close();
    if (!so) return fail(6, "cannot write " + out_dir + "/shapes.txt");
    std::fprintf(stderr, "mnn_probe_runner: %zu tensor shapes saved in %s\n", shape_names.size(), out_dir.c_str());
    return 0;
  }
  std::ofstream ops(out_dir + "/ops.txt");
  int seq = 0, n_raster = 0, n_device = 0, n_host = 0;
  bool write_failed = false;
  MNN::TensorCallBackWithInfo before = [&](const std::vector<MNN::Tensor*>&, const MNN::OperatorInfo* op) {
    std::fprintf(stderr, "mnn_probe_runner: op %s %s\n", op->type().c_str(), op->name().c_str());
    std::fflush(stderr);
    return true;
  };
  MNN::TensorCallBackWithInfo after = [&](const std::vector<MNN::Tensor*>& outs, const MNN::OperatorInfo* op) {
    if (op->type() == "Raster") n_raster++;
    for (size_t k = 0; k < outs.size(); k++) {
      const MNN::Tensor* t = outs[k];
      std::string d = descr_of(t);
      if (d.empty()) continue;
      bool dev = t->deviceId() != 0;
      (dev ? n_device : n_host)++;
      MNN::Tensor host(t, MNN::Tensor::CAFFE);
      t->copyToHostTensor(&host);
      std::vector<int> shape = host.shape();
      std::string file = "t_" + std::to_string(seq) + "_" + std::to_string(k) + ".npy";
      size_t bytes = static_cast<size_t>(host.size());
      if (!write_npy(out_dir + "/" + file, d, shape, host.buffer().host, bytes)) write_failed = true;
      ops << seq << " " << k << " " << (dev ? "device" : "host") << " " << d << " " << file << " " << op->type() << " "
          << op->name() << "\n";
    }
    seq++;
    return true;
  };
  std::fprintf(stderr, "mnn_probe_runner: phase run\n");
  std::fflush(stderr);
  auto t2 = std::chrono::steady_clock::now();
  MNN::ErrorCode ec = net->runSessionWithCallBackInfo(s, before, after, true);
  auto t3 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "mnn_probe_runner: phase fetch\n");
  std::fflush(stderr);
  ops.close();
  if (write_failed || !ops) return fail(6, "cannot write the tensors into " + out_dir);
  info << "load_ms " << std::chrono::duration<double, std::milli>(t1 - t0).count() << "\nrun_ms "
       << std::chrono::duration<double, std::milli>(t3 - t2).count() << "\nops_executed " << seq << "\nraster_steps "
       << n_raster << "\noutputs_on_device " << n_device << "\noutputs_on_host " << n_host << "\nerror_code "
       << static_cast<int>(ec) << "\n";
  info.close();
  if (ec != MNN::NO_ERROR) return fail(5, "runSessionWithCallBackInfo returned error " + std::to_string(ec));
  std::fprintf(stderr, "mnn_probe_runner: %d op outputs saved in %s (run %.2f ms, session backend %s)\n", seq,
               out_dir.c_str(), std::chrono::duration<double, std::milli>(t3 - t2).count(),
               forward_name(backends[0]));
  return 0;
}
