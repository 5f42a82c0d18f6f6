/* OpenCL entry points loaded at run time (dlopen); cldiff builds against the headers only.
 * CD_CL_FUNCS lists every function cldiff uses; the loader resolves each by name and
 * names the missing ones. */
#ifndef CD_CL_API_H
#define CD_CL_API_H
#include <CL/cl.h>
#include "util/error.h"

/* An X-macro list, kept as written. */
// clang-format off
#define CD_CL_FUNCS(X) \
    X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) \
    X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) \
    X(clCreateBuffer) X(clReleaseMemObject) X(clCreateProgramWithSource) \
    X(clCreateProgramWithBinary) X(clBuildProgram) X(clGetProgramBuildInfo) X(clGetProgramInfo) \
    X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg) \
    X(clGetKernelWorkGroupInfo) X(clEnqueueNDRangeKernel) X(clEnqueueReadBuffer) \
    X(clEnqueueWriteBuffer) X(clEnqueueFillBuffer) X(clEnqueueCopyBuffer) X(clFinish) X(clFlush) \
    X(clWaitForEvents) X(clGetEventProfilingInfo) X(clReleaseEvent)
// clang-format on

typedef struct cd_clfn {
#define CD_CL_FIELD(name) __typeof__(&name) name;
    CD_CL_FUNCS(CD_CL_FIELD)
#undef CD_CL_FIELD
    void *handle;   /* dlopen handle */
    char path[512]; /* library that was loaded */
} cd_clfn;
#endif
