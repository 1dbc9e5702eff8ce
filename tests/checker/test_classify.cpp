// How check words the end of a test case, on ends recorded from real runs
// (tests/fixtures/checker/cases/: exercises with injected mistakes).
#include "checker_fixtures.hpp"

#include "classify.hpp"
#include "crash_words.hpp"

#include "support/catch2_compat.hpp"

#include <csignal>

using sa::check::Status;

TEST_CASE("a segfault Catch2 caught (FatalErrorCondition) is named, in the function that crashed", "[checker]") {
  const auto r = replay("segfault.case");
  CHECK(r.status == Status::crash);
  CHECK(r.message ==
        "crashed: segmentation fault (an index outside a matrix or vector, or a recursion that never ends?), in focus");
  CHECK(r.function == "focus");
}

TEST_CASE("a stack overflow (a recursion without its base case) is a segfault that says so", "[checker]") {
  // (recorded: scaled_scores calling a helper that calls itself, row + 1,
  // with no end; Catch2 caught the SIGSEGV on its own stack)
  const auto r = replay("stack_overflow.case");
  CHECK(r.status == Status::crash);
  CHECK(r.message ==
        "crashed: segmentation fault (an index outside a matrix or vector, or a recursion that never ends?), in "
        "scaled_scores");
}

TEST_CASE("a hang is a time-out, in the function that never returned", "[checker]") {
  const auto r = replay("timeout.case");
  CHECK(r.status == Status::timeout);
  // (with the input the test case was on, from its INFO: Catch2's handler
  // of the SIGTERM reported it)
  CHECK(r.message ==
        "timed out after 2 s (an endless loop?) [multi_head_attention(X (15, 16), batch 3, n_heads 4)], in "
        "combine_heads");
  CHECK(sa::check::without_input(r.message) == "timed out after 2 s (an endless loop?), in combine_heads");
  CHECK(sa::check::input_context("crashed: abort [decode of ids [0, -1]]") == " [decode of ids [0, -1]]");
  CHECK(sa::check::input_context("crashed: v[3] read").empty());  // (not at the end: part of the sentence)
}

TEST_CASE("exit(0) inside an exercise is an early exit, not a pass", "[checker]") {
  const auto r = replay("exit0.case");
  CHECK(r.status == Status::crash);
  CHECK(r.message == "crashed: exited early with exit status 0 (exit() inside the exercise?), in padding_masks");
}

TEST_CASE("Eigen's failed index check reads as what it means", "[checker]") {
  const auto r = replay("eigen_index.case");
  CHECK(r.status == Status::crash);
  CHECK(r.message ==
        "crashed: m(i, j) with an index outside the matrix (i must be in [0, rows()), j in [0, cols())), in "
        "softmax_backward");
}

TEST_CASE("the input a crashed test case was on stays whole, brackets inside it too", "[checker]") {
  const auto r = replay("vector_index_input.case");
  CHECK(r.status == Status::crash);
  CHECK(r.message ==
        "crashed: v[i] with i outside the std::vector (i must be below v.size()) "
        "[decode of ids [0, -1] with a vocabulary of 3], in decode");
}

TEST_CASE("Eigen's 'resize() does not actually allow one to resize' reads as a block of another shape", "[checker]") {
  // (the assertion's line as a real build printed it, in a case made from
  // eigen_index.case)
  const auto r = replay("block_resize.case");
  CHECK(r.status == Status::crash);
  CHECK(r.message ==
        "crashed: a result of another shape assigned to a row, column or block (a block cannot be resized: both "
        "sides must have the same rows and columns), in multi_head_attention");
}

TEST_CASE("an uncaught exception of a type that is no std::exception is named by its type", "[checker]") {
  const auto r = replay("uncaught.case");
  CHECK(r.status == Status::crash);
  CHECK(r.message == "crashed: uncaught exception of type int, in mask_and");
}

TEST_CASE("a wrong value and an unwritten exercise keep the listener's words and hint", "[checker]") {
  const auto wrong = replay("wrong_value.case");
  CHECK(wrong.status == Status::fail);
  CHECK(wrong.message ==
        "attention(Q, K, V (6, 64)).output of the running example: largest error 1.6 at [0, 58] (got 3.20394444, "
        "expected 1.60197198); tolerance 1e-05 + 1e-04 * |expected|");
  CHECK(wrong.hint.empty());
  const auto todo = replay("todo.case");
  CHECK(todo.status == Status::todo);
  CHECK(todo.message == "not implemented yet: context_vector (edit exercises/01-qkv-projection/qkv.cpp)");
  CHECK(todo.hint.starts_with("the score of token j is the dot product"));
  CHECK(todo.function == "context_vector");
}

TEST_CASE("Catch2's FatalErrorCondition and a signal seen from outside say the same", "[checker]") {
  using sa::check::caught_signal_sentence;
  using sa::check::signal_sentence;
  // Catch2's own descriptions of the signals it catches (2.13 and 3 word them alike).
  CHECK(caught_signal_sentence("SIGSEGV - Segmentation violation signal") == signal_sentence(SIGSEGV));
  CHECK(caught_signal_sentence("SIGABRT - Abort (abnormal termination) signal") == signal_sentence(SIGABRT));
  CHECK(caught_signal_sentence("SIGFPE - Floating point error signal") == signal_sentence(SIGFPE));
  CHECK(signal_sentence(SIGFPE) == "crashed: floating-point exception (an integer division by zero?)");
  CHECK(caught_signal_sentence("SIGILL - Illegal instruction signal") == "crashed: SIGILL - Illegal instruction signal");
  CHECK(signal_sentence(SIGILL) == "crashed: killed by signal 4");
}

TEST_CASE("the ends no listener could report", "[checker]") {
  sa::check::CaseEnd end;
  end.report = "start\tsoftmax_rows: rows sum to 1\tsoftmax_rows\n";
  SECTION("killed by SIGKILL before the time limit: the out-of-memory killer") {
    end.exited = false;
    end.signal = SIGKILL;
    CHECK(sa::check::classify("t", end).message ==
          "crashed: killed by SIGKILL before the time limit (out of memory? a matrix far too large?), in softmax_rows");
  }
  SECTION("a hang after the test case ended: code after the tests, not the function it is about") {
    end.report += "pass\tsoftmax_rows: rows sum to 1\t\t\n";
    end.timed_out = true;
    end.limit_seconds = 3;
    const sa::check::CaseResult r = sa::check::classify("t", end);
    CHECK(r.status == Status::timeout);
    CHECK(r.message == "timed out after 3 s once the test case had passed: code that runs after the tests (a "
                       "global object's destructor in the exercises?) never returned");
  }
  SECTION("a failure, then a hang after the test case ended: the failure first") {
    end.report += "fail\tsoftmax_rows: rows sum to 1\texpected 1, got 2\t\n";
    end.timed_out = true;
    const sa::check::CaseResult r = sa::check::classify("t", end);
    CHECK(r.status == Status::fail);
    CHECK(r.message == "expected 1, got 2 (and then the process did not end: code that runs after the tests (a "
                       "global object's destructor in the exercises?) never returned)");
  }
  SECTION("a segfault Catch2 could not report") {
    end.exited = false;
    end.signal = SIGSEGV;
    CHECK(sa::check::classify("t", end).message ==
          "crashed: segmentation fault (an index outside a matrix or vector, or a recursion that never ends?), in "
          "softmax_rows");
  }
  SECTION("an abort with glibc's words about the heap") {
    end.exited = false;
    end.signal = SIGABRT;
    end.output = "free(): invalid next size (fast)\n";
    CHECK(sa::check::classify("t", end).message ==
          "crashed: the heap is damaged (free(): invalid next size (fast): a write outside a buffer, or a missing "
          "return?), in softmax_rows");
  }
  SECTION("a reader's own assert") {
    end.exited = false;
    end.signal = SIGABRT;
    end.output = "test_03_exercises: softmax.cpp:12: sa::Matrix sa::softmax_rows(const Matrix&): Assertion `n > 0' failed.\n";
    CHECK(sa::check::classify("t", end).message == "crashed: assert failed: n > 0, in softmax_rows");
  }
  SECTION("a name Catch2 could not select") {
    end.exit_status = 2;
    end.report.clear();
    end.output = "No test cases matched 't'\n";
    CHECK(sa::check::classify("t", end).message ==
          "the suite has no test of this name: a line printed as the suite started (by a global object's "
          "constructor in the exercises?) was taken for a test's name, or it is a book bug");
  }
}

TEST_CASE("each Eigen check has its sentence", "[checker]") {
  using sa::check::explain_assertion;
  CHECK(explain_assertion("(i>=0) && ( ((BlockRows==1) && (BlockCols==XprType::ColsAtCompileTime)) && i<xpr.rows()) "
                          "||((BlockRows==XprType::RowsAtCompileTime) && (BlockCols==1) && i<xpr.cols()))",
                          "... [with XprType = Matrix<float, -1, -1, 1>; int BlockRows = 1; int BlockCols = -1; ...]") ==
        ".row(i) with i outside the matrix's rows (i must be at least 0 and below rows())");
  CHECK(explain_assertion("lhs.cols() == rhs.rows() && \"invalid matrix product\"", "").starts_with("a matrix product A * B"));
  CHECK(explain_assertion("index >= 0 && index < size()", "") == "v(i) with i outside the vector (i must be in [0, size()))");
  CHECK(explain_assertion("this->_M_is_engaged()", "").starts_with("an empty std::optional read with * or ->"));
  CHECK(explain_assertion("__builtin_expect(!this->empty(), true)", "") ==
        "front(), back() or pop_back() of an empty std::vector");
  CHECK(explain_assertion("n > 0", "").empty());
}
