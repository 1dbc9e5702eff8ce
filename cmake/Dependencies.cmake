# Each dependency is a Debian package. A missing one stops configuration with
# the name of the package to install (the book's `./book setup` installs all).

function(sa_require_package found package)
  if(NOT ${found})
    message(FATAL_ERROR
      "Missing dependency: install the Debian package '${package}' "
      "(sudo apt-get install ${package}), or run ./book setup")
  endif()
endfunction()

find_package(Eigen3 3.4 QUIET NO_MODULE)
sa_require_package(Eigen3_FOUND libeigen3-dev)

find_package(fmt 9 QUIET)
sa_require_package(fmt_FOUND libfmt-dev)

# Boost's own CMake files (CMake 3.30 on, Debian 13, warns about its old
# FindBoost module otherwise; Debian 12's CMake has no such policy).
if(POLICY CMP0167)
  cmake_policy(SET CMP0167 NEW)
endif()
find_package(Boost 1.74 QUIET COMPONENTS iostreams filesystem)
sa_require_package(Boost_FOUND "libboost-iostreams-dev libboost-filesystem-dev")

# Chapter 7's checkpoints: safetensors files, whose JSON header is parsed and
# written with nlohmann-json and whose CRC-32 is Boost.CRC's (header-only,
# boost/crc.hpp: Boost::headers).
find_package(nlohmann_json 3 QUIET)
sa_require_package(nlohmann_json_FOUND nlohmann-json3-dev)

find_path(SA_GNUPLOT_IOSTREAM_DIR gnuplot-iostream.h)
if(NOT SA_GNUPLOT_IOSTREAM_DIR)
  sa_require_package(SA_GNUPLOT_IOSTREAM_DIR libgnuplot-iostream-dev)
endif()

# The suites build against Catch2 2.13 (Debian 12's catch2) or Catch2 3
# (Debian 13's): tests/support/catch2_compat.hpp and main.cpp say where the
# two differ.
if(SA_BUILD_TESTS)
  find_package(Catch2 2.13 QUIET)
  if(NOT Catch2_FOUND)
    find_package(Catch2 3 QUIET)
  endif()
  sa_require_package(Catch2_FOUND catch2)
  # (2 or 3: the suites include that version's headers, not whichever one
  # the compiler's include path finds first)
  string(REGEX MATCH "^[0-9]+" SA_CATCH2_MAJOR "${Catch2_VERSION}")
endif()

# gnuplot itself is needed only at run time, to draw figures; without it the
# programs run and say once that figures were skipped.
find_program(SA_GNUPLOT gnuplot)
if(NOT SA_GNUPLOT)
  message(STATUS "gnuplot not found: figures will be skipped (apt-get install gnuplot-nox)")
endif()
