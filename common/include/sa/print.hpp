// Printing that reads like the book: numbered steps, shapes the way PyTorch
// prints them, and tensors formatted like torch's print (fixed precision,
// aligned columns, "..." for the middle of large tensors).
#pragma once

#include "sa/tensor.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace sa {

struct PrintOptions {
  int precision = 4;     // digits after the point, like torch's default
  int64_t max_rows = 12; // more rows than this: first and last `edge` rows
  int64_t max_cols = 8;  // more columns than this: first and last `edge` columns
  int64_t edge = 3;
  int indent = 4;
  // What print_labelled's rows and columns are, printed after the shape.
  const char* axes = "(rows: queries, columns: keys)";
};

// "== Chapter 1: from words to Q, K and V ==" with a rule under it.
void chapter_title(std::string_view title);
// "Step 3. Project X into queries, keys and values"
void step(int number, std::string_view title);
// An explanation, word-wrapped at 78 columns and indented.
void say(std::string_view text);
// A blank line.
void gap();

// The values of a matrix in torch's style, without the name.
std::string format_matrix(const Matrix& m, const PrintOptions& opt = {});
// "Q  shape (1, 6, 64)" followed by the values. `shown` is the shape to print
// when the matrix stands for a larger tensor (batch 1: (1, 6, 64)).
void print_tensor(std::string_view name, const Matrix& m, const Shape& shown = {}, const PrintOptions& opt = {});
// "Q  shape (1, 6, 64)" only.
void print_shape(std::string_view name, const Shape& shape, std::string_view comment = "");
// A matrix with labels on rows and columns, for attention-like matrices.
// `shown` is the shape to print when the matrix stands for a larger tensor,
// e.g. (1, 6, 6) for batch 1. Whole up to 16 columns and 32 rows (a table a
// terminal shows); a larger one, a long --text's, keeps its first and last
// 6 columns and 12 rows around a "..." column and row.
void print_labelled(std::string_view name, const Matrix& m, const std::vector<std::string>& row_labels,
                    const std::vector<std::string>& col_labels, const PrintOptions& opt = {},
                    const Shape& shown = {});
// The table print_labelled prints under the shape line.
std::string format_labelled(const Matrix& m, const std::vector<std::string>& row_labels,
                            const std::vector<std::string>& col_labels, const PrintOptions& opt = {});

// "[0.6652, 0.2447, 0.0900]": row `row` of m, inline, each value as
// format_value writes it.
std::string format_row(const Matrix& m, int64_t row = 0, int precision = 4);

// A bar of `width` characters, '#' for the share `fraction` (0..1) and '.'
// for the rest: "######....", for tables and progress lines.
std::string text_bar(double fraction, int width);

// One number the way format_matrix writes it ("-0.1234", "-inf", "nan").
std::string format_value(double v, int precision = 4);

// A difference that float32 rounding explains, printed as the bound it stays
// under ("below 1e-6") rather than as its digits: those depend on the CPU,
// because a vector unit of 4, 8 or 16 floats adds the terms of a sum in
// another order, so a reader's 1.5e-08 is no less right than the book's
// 2.6e-08. A difference above the bound is no rounding and is printed with
// its digits and the bound ("3.2e-03, above the rounding bound 1e-6"), so a
// real error still shows.
std::string rounding(double difference, double bound);
// The bound for values of size up to `scale` (the largest |value| compared):
// 1e-6 up to 1, then the power of ten at or above 1e-6 * scale. float32 holds
// about 7 digits (its epsilon is 1.2e-7), so this is some eight units of the
// last one: a sum of a few hundred terms in another order stays under it.
double rounding_bound(double scale);

// A size in bytes as a reader reads it: "64.0 KiB", "512.0 MiB", "1.00 GiB".
std::string bytes_str(double bytes);

// A bound a sentence states, rounded outward at `decimals` digits so that it
// stays true of the unrounded number: "within 0.6" for 0.53 (to nearest it
// would read "within 0.5"), "between 0.90 and 1.16" for 0.904 to 1.155. The
// number is the bound's digits: print it with the same precision.
double bound_above(double x, int decimals);
double bound_below(double x, int decimals);

// A count and its noun, singular for one: "1 token", "6 tokens" (the plural
// is the noun plus "s" unless given: count_of(2, "query", "queries")).
std::string count_of(int64_t n, std::string_view noun, std::string_view plural = {});

}  // namespace sa
