# Cross-compiling cldiff for aarch64 Linux with Debian's cross toolchain
# (gcc-aarch64-linux-gnu) and arm64 libraries unpacked into a sysroot folder
# (scripts/cross-aarch64.sh builds it; docs/hardening.md).
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-toolchain.cmake \
#         -DCD_AARCH64_SYSROOT=/path/to/sysroot
#
# The sysroot holds the arm64 .deb contents of HDF5, libpng, zlib, Criterion, libgomp and
# their dependencies. libhdf5-dev:arm64 cannot be installed next to the amd64 one (multiarch
# conflict), hence the folder instead of dpkg. glibc and the C runtime come from the cross
# toolchain's own /usr/aarch64-linux-gnu (so CMAKE_SYSROOT is not set: gcc keeps finding its
# crt files); the sysroot is only a search root for headers and libraries.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

if(NOT CD_AARCH64_SYSROOT)
  set(CD_AARCH64_SYSROOT $ENV{CD_AARCH64_SYSROOT})
endif()
if(NOT CD_AARCH64_SYSROOT OR NOT EXISTS ${CD_AARCH64_SYSROOT}/usr/include)
  message(FATAL_ERROR "CD_AARCH64_SYSROOT must name the arm64 sysroot folder (scripts/cross-aarch64.sh makes it)")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;${CD_AARCH64_SYSROOT})
# try_compile projects see the variable too
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CD_AARCH64_SYSROOT)

set(CMAKE_FIND_ROOT_PATH ${CD_AARCH64_SYSROOT} /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# HDF5: Debian's serial flavour lives in hdf5/serial subfolders, which FindHDF5 only finds
# through the (host) h5cc wrapper. Name it directly.
set(HDF5_C_INCLUDE_DIR ${CD_AARCH64_SYSROOT}/usr/include/hdf5/serial CACHE PATH "")
set(HDF5_C_LIBRARY_hdf5 ${CD_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/hdf5/serial/libhdf5.so CACHE FILEPATH "")

set(_cd_libdirs ${CD_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu ${CD_AARCH64_SYSROOT}/lib/aarch64-linux-gnu
    ${CD_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/hdf5/serial)
string(REPLACE ";" ":" _cd_rpl "${_cd_libdirs}")
# Transitive shared-library dependencies (libcurl, libssl... of libhdf5) are resolved by the
# linker through -rpath-link; -isystem so the sysroot headers never shadow the toolchain's.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_cd_rpl}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_cd_rpl}")
