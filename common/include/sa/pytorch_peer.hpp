// Running a benchmark's PyTorch peer (a script under tests/reference/) and
// reading what it prints: shared by the chapters' benchmarks, which each
// parse their own result lines out of it.
//
// The peer runs on one thread, like the benchmarks: torch's intra-op
// threads (OMP_NUM_THREADS) and OpenBLAS's own (OPENBLAS_NUM_THREADS). It
// runs on whatever BLAS the dynamic linker finds; to time it on OpenBLAS
// without installing it, point LD_LIBRARY_PATH at OpenBLAS's folder, which
// the peer inherits. tests/reference/bench/blas.py prints which one ran.
#pragma once

#include "sa/cli.hpp"
#include "sa/measure.hpp"
#include "sa/paths.hpp"

#include <fmt/core.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace sa::measure {

// The BLAS the peer's products ran on, from the line blas.py prints:
// "pytorch_blas <name> <optimised|reference> <kernels> <asked>".
struct PeerBlas {
  std::string name = "unknown";
  bool optimised = false;     // OpenBLAS (or MKL, BLIS), not the reference BLAS
  std::string kernels = "-";  // OpenBLAS's choice, e.g. Haswell or SkylakeX
  std::string asked = "-";    // OPENBLAS_CORETYPE as the environment had it

  // "libopenblasp-r0.3.21.so (an optimised BLAS), its Haswell kernels"
  std::string description() const {
    return fmt::format("{} ({} BLAS){}", name, optimised ? "an optimised" : "the reference",
                       openblas_kernels(kernels, asked));
  }
};

struct PeerOutput {
  PeerBlas blas;
  std::vector<std::string> lines;  // every other line, stdout and stderr together, without the newline
  int status = 0;                  // as pclose returned it (-1: the peer could not be started)
  bool succeeded() const { return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs `/usr/bin/python3 <source dir>/<script> <args>...` on one thread and
// collects its output. The BLAS line is parsed here; the caller reads its
// own lines from `lines`. Every word is quoted for the shell: the clone's
// folder may hold a space or a quote.
inline PeerOutput run_pytorch_peer(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd = fmt::format("OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 {}",
                                shell_quoted((source_dir() / script).string()));
  for (const std::string& arg : args) cmd += fmt::format(" {}", shell_quoted(arg));
  cmd += " 2>&1";
  PeerOutput out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    out.status = -1;
    out.lines.push_back("could not start /usr/bin/python3 (popen failed)");
    return out;
  }
  std::array<char, 1024> buf{};
  std::string line;
  while (fgets(buf.data(), int(buf.size()), pipe)) {
    line += buf.data();
    if (line.empty() || line.back() != '\n') continue;  // a line longer than the buffer: read on
    line.pop_back();
    std::istringstream words(line);
    std::string tag, kind;
    if (words >> tag && tag == "pytorch_blas") {
      words >> out.blas.name >> kind >> out.blas.kernels >> out.blas.asked;
      out.blas.optimised = kind == "optimised";
    } else {
      out.lines.push_back(line);
    }
    line.clear();
  }
  if (!line.empty()) out.lines.push_back(line);
  out.status = pclose(pipe);
  return out;
}

// Why the peer failed, in one line: how it ended (its exit status, or the
// signal that killed it) and the last line it wrote that is not indented.
// A Python traceback ends with the exception, and sys.exit's message is a
// line of its own, so that line says what went wrong without the
// traceback above it.
inline std::string peer_failure(const PeerOutput& out) {
  std::string last;
  for (const std::string& line : out.lines)
    if (!line.empty() && line[0] != ' ') last = line;
  if (out.status == -1) return last;
  std::string how;
  if (WIFSIGNALED(out.status))
    how = fmt::format("it was killed by signal {} (out of memory?)", WTERMSIG(out.status));
  else if (WIFEXITED(out.status) && WEXITSTATUS(out.status) > 128)  // the shell reports a signal as 128 + n
    how = fmt::format("it was killed by signal {} (out of memory?)", WEXITSTATUS(out.status) - 128);
  else
    how = fmt::format("it exited with status {}", WIFEXITED(out.status) ? WEXITSTATUS(out.status) : -1);
  if (last.empty()) return how + " and printed nothing";
  if (last.find("MemoryError") != std::string::npos || last.find("DefaultCPUAllocator") != std::string::npos)
    return how + ", out of memory: " + last;
  if (last.find("No module named") != std::string::npos)
    return how + ": " + last + " (apt-get install python3-torch)";
  return how + ": " + last;
}

// What a benchmark says when the peer's products ran on the reference BLAS
// (after "no ratio printed: ..."). Not only a missing OpenBLAS does it:
// LD_LIBRARY_PATH or Debian's alternatives for libblas.so.3 can choose the
// reference BLAS while OpenBLAS is installed.
inline constexpr const char* kReferenceBlasAdvice =
    "Install OpenBLAS (apt-get install libopenblas0-pthread), or, where it is installed, see that LD_LIBRARY_PATH "
    "and update-alternatives (libblas.so.3) let torch load it; then run again.";

// --pytorch needs /usr/bin/python3 with torch: asked before any timing, so
// a missing package is one line (status 2), not a failure after minutes of
// work. It also says which BLAS torch's products will run on (blas.py run
// alone): on the reference BLAS the peer takes 5 to 12 times as long as on
// OpenBLAS, which a benchmark's estimate has to know before it starts.
inline PeerBlas require_pytorch() {
  // Without /usr/bin/python3 the shell says "not found" (status 127): no
  // product failed, there is no Python (a Debian root without it).
  if (::access("/usr/bin/python3", X_OK) != 0)
    throw UsageError("--pytorch needs /usr/bin/python3 with torch; there is no /usr/bin/python3 here (apt-get "
                     "install python3-torch)");
  const PeerOutput out = run_pytorch_peer("tests/reference/bench/blas.py", {});
  if (out.succeeded()) return out.blas;
  const std::string why = peer_failure(out);
  if (out.status == -1 || why.find("No module named") != std::string::npos)
    throw UsageError("--pytorch needs /usr/bin/python3 with torch, which cannot import it here (apt-get install "
                     "python3-torch)");
  throw UsageError("--pytorch: /usr/bin/python3 with torch failed a first product: " + why);
}

}  // namespace sa::measure
