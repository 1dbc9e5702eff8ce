// Timing and memory measurements shared by the benchmarks and chapter 8's
// program: medians of wall-clock time, the extra resident memory a call
// needs, and this core's matrix-product peak.
#pragma once

#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sa::measure {

// The CPU /proc/cpuinfo names, for a program built for the instruction set
// `built_for` (kBuiltFor: this program's). Its "model name" (x86, 32-bit
// ARM); on 64-bit ARM, whose Linux prints none, the implementer and part
// numbers; "an unnamed CPU" where it has neither. When the file describes
// another instruction set than the program's, the program runs under an
// emulator (qemu-user passes the host's /proc/cpuinfo through): the line
// says so, since then every speed is the emulator's, not the CPU's.
enum class Isa { x86, arm, other };
#if defined(__x86_64__) || defined(__i386__)
inline constexpr Isa kBuiltFor = Isa::x86;
#elif defined(__aarch64__) || defined(__arm__)
inline constexpr Isa kBuiltFor = Isa::arm;
#else
inline constexpr Isa kBuiltFor = Isa::other;
#endif

inline std::string cpu_name(std::istream& info, Isa built_for = kBuiltFor) {
  std::string model, implementer, part;
  bool x86 = false;  // vendor_id: a field only x86's /proc/cpuinfo has
  for (std::string line; std::getline(info, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = line.substr(std::min(line.size(), colon + 2));
    if (key == "model name" && model.empty()) model = value;
    if (key == "vendor_id") x86 = true;
    if (key == "CPU implementer" && implementer.empty()) implementer = value;
    if (key == "CPU part" && part.empty()) part = value;
  }
  const bool arm = !implementer.empty();
  std::string cpu = "an unnamed CPU";
  if (!model.empty()) cpu = model;
  else if (arm) cpu = "an ARM CPU (implementer " + implementer + ", part " + (part.empty() ? "?" : part) + ")";
  if (built_for == Isa::arm && x86) return "an ARM CPU emulated on " + cpu + " (the speeds are the emulator's)";
  if (built_for == Isa::x86 && arm) return "an x86 CPU emulated on " + cpu + " (the speeds are the emulator's)";
  return cpu;
}

// The machine a figure was measured on, for the line above a benchmark's
// figures: the CPU (cpu_name) and the instructions this program was
// compiled to use (Eigen's vectors: 16 floats with AVX-512, 8 with AVX, 4
// with SSE or NEON). Instructions, not the CPU's unit: a Zen 4 core runs
// AVX-512's 16 floats as two halves of 8.
// A speed belongs to one CPU and one vector width; the same program on
// another machine prints other figures.
inline std::string machine_description() {
  std::ifstream info("/proc/cpuinfo");
  const std::string cpu = cpu_name(info);
#if defined(EIGEN_VECTORIZE_AVX512)
  const char* vector = "AVX-512, 16 floats a vector";
#elif defined(EIGEN_VECTORIZE_AVX2) && defined(EIGEN_VECTORIZE_FMA)
  const char* vector = "AVX2 + FMA, 8 floats a vector";
#elif defined(EIGEN_VECTORIZE_AVX)
  const char* vector = "AVX, 8 floats a vector";
#elif defined(EIGEN_VECTORIZE_NEON)
  const char* vector = "NEON, 4 floats a vector";
#elif defined(EIGEN_VECTORIZE_SSE4_2)
  const char* vector = "SSE4.2, 4 floats a vector";
#elif defined(EIGEN_VECTORIZE_SSE2)
  const char* vector = "SSE2, 4 floats a vector";
#else
  const char* vector = "none (scalar code)";
#endif
  return cpu + ", code for " + vector;
}

inline double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Wall-clock time and this thread's CPU time, in seconds. On a busy machine
// the two part: the wall clock also counts the turns other programs took on
// this core, the thread's CPU time does not.
struct Times {
  double wall = 0, cpu = 0;
};

inline Times times_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return {seconds_now(), double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec)};
}
inline Times operator-(Times a, Times b) { return {a.wall - b.wall, a.cpu - b.cpu}; }

// The median of a few measurements (of an even count, the mean of the
// middle two). At least one.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The median of the wall times and the median of the CPU times (each on its
// own: they need not come from the same run).
inline Times median(const std::vector<Times>& v) {
  std::vector<double> w, c;
  for (const Times& t : v) {
    w.push_back(t.wall);
    c.push_back(t.cpu);
  }
  return {median(w), median(c)};
}

// The median wall time of f() in milliseconds, over at least `min_runs`
// runs and as many more as fit in `budget_s` seconds (at most `max_runs`).
// A median, not a mean: on a shared machine a few runs get interrupted.
inline double median_ms(const std::function<void()>& f, double budget_s = 0.3, int min_runs = 3, int max_runs = 50) {
  std::vector<double> t;
  const double start = seconds_now();
  while (int(t.size()) < min_runs || (seconds_now() - start < budget_s && int(t.size()) < max_runs)) {
    const double t0 = seconds_now();
    f();
    t.push_back(1e3 * (seconds_now() - t0));
  }
  return median(std::move(t));  // (of an even count, the mean of the middle two, as everywhere)
}

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"), if readable.
inline std::optional<int64_t> status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t kb = 0;
  while (status >> key) {
    if (key == field + ":" && status >> kb) return kb * 1024;
    status.ignore(1 << 20, '\n');
  }
  return std::nullopt;
}

// The resident memory f() adds at its peak, beyond what was resident before
// it ran, minus `output_bytes` (the result it returns is not "extra").
// Linux resets the peak (VmHWM) when "5" is written to /proc/self/clear_refs.
// Measured, not computed: it counts every buffer f allocates and touches.
// malloc_trim first hands the free pages the allocator keeps back to the
// system: a buffer f allocates must then touch fresh pages, which count,
// instead of reusing resident ones left by an earlier call, which would not.
inline std::optional<int64_t> extra_bytes(const std::function<void()>& f, int64_t output_bytes) {
  malloc_trim(0);
  const auto before = status_bytes("VmRSS");
  {
    std::ofstream reset("/proc/self/clear_refs");
    if (!reset || !(reset << "5") || !reset.flush()) return std::nullopt;
  }
  f();
  const auto peak = status_bytes("VmHWM");
  if (!before || !peak) return std::nullopt;
  return std::max<int64_t>(0, *peak - *before - output_bytes);
}

// How long this machine takes to hand the process a page of memory it has
// not touched before, in microseconds: the median over three 64 MiB buffers
// (each new[] of that size is fresh pages from the kernel, and delete[]
// gives them back), one write a page. Typically 0.1-0.3 us; much more in some
// virtual machines, where it can dominate a computation that allocates its
// large matrices afresh every call.
inline double fresh_page_us() {
  constexpr int64_t bytes = int64_t(64) << 20, page = 4096;
  std::vector<double> us;
  for (int run = 0; run < 3; ++run) {
    const double t0 = seconds_now();
    {
      std::unique_ptr<volatile char[]> buffer(new volatile char[bytes]);
      for (int64_t at = 0; at < bytes; at += page) buffer[at] = 1;
    }
    us.push_back(1e6 * (seconds_now() - t0) / double(bytes / page));
  }
  std::sort(us.begin(), us.end());
  return us[1];
}

// This core's float matrix-product speed: the median of C = A B for
// 1024 x 1024 matrices with Eigen, in GFLOP/s (2 n³ operations). The yardstick
// the attentions' GFLOP/s are read against.
inline double gemm_peak_gflops(Generator& gen) {
  constexpr int64_t n = 1024;
  const Matrix A = gen.randn(n, n), B = gen.randn(n, n);
  Matrix C(n, n);
  const double ms = median_ms([&] { C.noalias() = A * B; }, 0.5, 5);
  return 2.0 * double(n) * double(n) * double(n) / (ms * 1e6);
}

// The same product timed by this thread's CPU time (the median of 7): on a
// busy machine the wall clock also counts other programs' turns on the
// core, and a peak measured by it comes out low. A benchmark that reports
// CPU times reads them against this one.
inline double gemm_peak_cpu_gflops(Generator& gen) {
  constexpr int64_t n = 1024;
  const Matrix A = gen.randn(n, n), B = gen.randn(n, n);
  Matrix C(n, n);
  C.noalias() = A * B;  // once untimed: the pages of C, the packing buffers
  std::vector<double> s;
  for (int run = 0; run < 7; ++run) {
    const Times t0 = times_now();
    C.noalias() = A * B;
    s.push_back((times_now() - t0).cpu);
  }
  std::sort(s.begin(), s.end());
  return 2.0 * double(n) * double(n) * double(n) / (s[s.size() / 2] * 1e9);
}

// A speed as a share of this core's GEMM peak measured in the same run,
// "44% of this core's float GEMM peak" (`decimals` after the point). The
// peak is one timing of a 1024^3 product: another program on the core
// during it makes it come out low, and a share above 100% would then be
// printed as if measured (chapter 7's benchmark printed such shares).
// Faster than the peak proves that timing disturbed: no share is given.
inline std::string share_of_peak(double gflops, double peak, int decimals) {
  if (!(gflops <= peak)) return "n/a (faster than the peak measured: that measurement was disturbed)";
  return fmt::format("{:.{}f}% of this core's float GEMM peak", 100.0 * gflops / peak, decimals);
}

// How the benchmarks name the PyTorch peer's BLAS kernels, from the line
// tests/reference/bench/blas.py prints: ", its SkylakeX kernels", and why
// when the environment's OPENBLAS_CORETYPE asked for others ("-": none).
inline std::string openblas_kernels(const std::string& kernels, const std::string& asked) {
  if (kernels.empty() || kernels == "-") return "";
  std::string s = ", its " + kernels + " kernels";
  // (blas.py asks for the SkylakeX kernels on a CPU with AVX-512, over the
  // environment's choice; on another CPU OpenBLAS may refuse what the
  // environment asked for: only the first case is the faster kernels)
  if (!asked.empty() && asked != "-" && asked != kernels)
    s += " (this environment sets OPENBLAS_CORETYPE=" + asked + "; " +
         (kernels == "SkylakeX" ? "the benchmark asked for the SkylakeX kernels over it, the AVX-512 ones this CPU "
                                  "has, which are faster)"
                                : "OpenBLAS ran its " + kernels + " kernels instead)");
  return s;
}

}  // namespace sa::measure
