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

if(SA_BUILD_TESTS)
  find_package(Catch2 2.13 QUIET)
  sa_require_package(Catch2_FOUND catch2)
endif()

# gnuplot itself is needed only at run time, to draw figures; without it the
# programs run and say once that figures were skipped.
find_program(SA_GNUPLOT gnuplot)
if(NOT SA_GNUPLOT)
  message(STATUS "gnuplot not found: figures will be skipped (apt-get install gnuplot-nox)")
endif()
