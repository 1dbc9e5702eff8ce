// The owner of the book's precompiled header (common/CMakeLists.txt): the
// build parses Eigen and fmt here once, and every other target reuses the
// result. Nothing to compile of its own.
