# Cross-compiling for 64-bit ARM (aarch64) with Debian's cross compiler
# (g++-aarch64-linux-gnu) and the arm64 builds of the libraries
# (dpkg --add-architecture arm64; libfmt-dev:arm64, libboost-iostreams-dev:arm64,
# libboost-filesystem-dev:arm64). The programs then run under qemu-user:
#   qemu-aarch64 -L /usr/aarch64-linux-gnu build-aarch64/bin/01-qkv-projection
# CI builds chapters 1-6 this way and checks their READMEs (.ci/run), so that
# nothing in the code assumes x86.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
