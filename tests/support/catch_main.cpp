// Catch2's main() and implementation, for a Catch2 package without
// libCatch2WithMain.a (tests/CMakeLists.txt); Debian's has it, and this file
// is then not compiled.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
