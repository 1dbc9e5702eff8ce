#include "support/fixtures.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sa::test {

Fixtures::Fixtures(const std::string& file) : file_(file) {
  const std::string path = std::string(SA_FIXTURES_DIR) + "/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("fixture file not found: " + path + " (run tests/reference/make_fixtures.sh)");
  std::string line;
  Entry* current = nullptr;
  std::string current_name;
  auto finish = [&] {
    if (!current) return;
    const int64_t want = numel(current->shape);
    const int64_t got = current->is_f32 ? int64_t(current->f32.size()) : int64_t(current->i64.size());
    if (want != got)
      throw std::runtime_error(fmt::format("{}: '{}' has {} values, its shape {} needs {}", file_, current_name, got,
                                           shape_str(current->shape), want));
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    if (line[0] == '@') {
      finish();
      std::string at, name, dtype;
      words >> at >> name >> dtype;
      Entry e;
      e.is_f32 = dtype == "f32";
      if (!e.is_f32 && dtype != "i64") throw std::runtime_error(file_ + ": unknown dtype " + dtype);
      for (int64_t d; words >> d;) e.shape.push_back(d);
      current_name = name;
      current = &(entries_[name] = std::move(e));
      continue;
    }
    if (!current) throw std::runtime_error(file_ + ": values before the first '@' header");
    for (std::string word; words >> word;) {
      // strtof/strtoll accept "inf", "-inf" and "nan", which PyTorch masks
      // need; the whole word must be the number ("1.5x" or "3e" is a broken
      // fixture, not 1.5 or 3), and an integer must fit.
      char* end = nullptr;
      errno = 0;
      if (current->is_f32)
        current->f32.push_back(std::strtof(word.c_str(), &end));
      else
        current->i64.push_back(std::strtoll(word.c_str(), &end, 10));
      if (end != word.c_str() + word.size() || (!current->is_f32 && errno == ERANGE))
        throw std::runtime_error(fmt::format("{}: '{}' holds '{}', not a {} number", file_, current_name, word,
                                             current->is_f32 ? "float32" : "64-bit integer"));
    }
  }
  finish();
}

bool Fixtures::has(const std::string& name) const { return entries_.count(name) != 0; }

const Fixtures::Entry& Fixtures::get(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw std::runtime_error(file_ + ": no fixture named '" + name + "'");
  return it->second;
}

const Shape& Fixtures::shape(const std::string& name) const { return get(name).shape; }

const std::vector<float>& Fixtures::f32(const std::string& name) const {
  const Entry& e = get(name);
  if (!e.is_f32) throw std::runtime_error(file_ + ": '" + name + "' is i64, not f32");
  return e.f32;
}

const std::vector<int64_t>& Fixtures::i64(const std::string& name) const {
  const Entry& e = get(name);
  if (e.is_f32) throw std::runtime_error(file_ + ": '" + name + "' is f32, not i64");
  return e.i64;
}

float Fixtures::scalar(const std::string& name) const {
  const auto& v = f32(name);
  if (v.size() != 1) throw std::runtime_error(file_ + ": '" + name + "' is not a scalar");
  return v[0];
}

Matrix Fixtures::matrix(const std::string& name) const {
  const Entry& e = get(name);
  Shape s = e.shape;
  while (s.size() > 2 && s.front() == 1) s.erase(s.begin());
  if (s.size() == 1) s.insert(s.begin(), 1);
  if (s.size() != 2)
    throw std::runtime_error(fmt::format("{}: '{}' has shape {}, not a matrix", file_, name, shape_str(e.shape)));
  return ConstMatrixMap(f32(name).data(), s[0], s[1]);
}

Matrix Fixtures::matrix(const std::string& name, int64_t b) const {
  const Entry& e = get(name);
  if (e.shape.size() != 3 || b < 0 || b >= e.shape[0])
    throw std::runtime_error(fmt::format("{}: '{}' has shape {}, no batch {}", file_, name, shape_str(e.shape), b));
  const int64_t r = e.shape[1], c = e.shape[2];
  return ConstMatrixMap(f32(name).data() + b * r * c, r, c);
}

Matrix Fixtures::stacked(const std::string& name) const {
  const Shape& s = shape(name);
  if (s.size() != 3)
    throw std::runtime_error(fmt::format("{}: '{}' has shape {}, not (B, S, D)", file_, name, shape_str(s)));
  return ConstMatrixMap(f32(name).data(), s[0] * s[1], s[2]);
}

Tensor4 Fixtures::tensor4(const std::string& name) const {
  const Shape& s = shape(name);
  if (s.size() != 4)
    throw std::runtime_error(fmt::format("{}: '{}' has shape {}, not 4-D", file_, name, shape_str(s)));
  Tensor4 t(s[0], s[1], s[2], s[3]);
  const auto& values = f32(name);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

Mask Fixtures::mask(const std::string& name) const {
  const Shape& s = shape(name);
  if (s.size() != 2)
    throw std::runtime_error(fmt::format("{}: '{}' has shape {}, not a 2-D mask", file_, name, shape_str(s)));
  const auto& values = i64(name);
  Mask m(s[0], s[1]);
  for (int64_t k = 0; k < m.size(); ++k) m.data()[k] = values[size_t(k)] != 0;
  return m;
}

Linear Fixtures::linear(const std::string& prefix) const {
  Linear layer;
  layer.W = matrix(prefix + ".W");
  if (has(prefix + ".b")) layer.b = RowVector(matrix(prefix + ".b"));
  return layer;
}

AttentionParams Fixtures::attention_params(const std::string& prefix) const {
  return {linear(prefix + ".W_q"), linear(prefix + ".W_k"), linear(prefix + ".W_v"), linear(prefix + ".W_o")};
}

}  // namespace sa::test
